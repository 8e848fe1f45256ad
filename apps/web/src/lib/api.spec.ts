import { describe, expect, it } from 'vitest';
import { ApiError, itemsOf, parseResponse, readCookie } from './api';

describe('api helpers', () => {
  it('reads the CSRF cookie among others', () => {
    expect(readCookie('a=1; dryft_csrf=abc%3D; b=2', 'dryft_csrf')).toBe('abc=');
    expect(readCookie('a=1', 'dryft_csrf')).toBeNull();
  });

  it("surfaces the API's own error message", async () => {
    const res = new Response(
      JSON.stringify({
        error: {
          code: 'daily_limit_reached',
          message: 'Used all 1 official runs',
          details: { bucket: 'official' },
        },
      }),
      { status: 429 },
    );
    const err = (await parseResponse(res).catch((e) => e)) as ApiError;
    expect(err).toBeInstanceOf(ApiError);
    expect(err.status).toBe(429);
    expect(err.code).toBe('daily_limit_reached');
    expect(err.message).toBe('Used all 1 official runs');
    expect(err.details).toEqual({ bucket: 'official' });
  });

  it('explains a non-JSON failure', async () => {
    const err = (await parseResponse(
      new Response('<html>', { status: 502, statusText: 'Bad Gateway' }),
    ).catch((e) => e)) as ApiError;
    expect(err.message).toMatch(/502/);
  });

  it('accepts bare arrays and { items } lists', () => {
    expect(itemsOf([1, 2])).toEqual([1, 2]);
    expect(itemsOf({ items: [3], nextCursor: null })).toEqual([3]);
    expect(itemsOf({ agents: [4] })).toEqual([4]);
    expect(itemsOf(null)).toEqual([]);
  });
});
