import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { api, ApiError, itemsOf, onRetryNotices, parseResponse, rateLimitedMessage, readCookie } from './api';

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

  it("a rate-limited request keeps the hub's words and adds when to try again on this clock", async () => {
    const res = new Response(
      JSON.stringify({
        error: {
          code: 'rate_limited',
          message: 'Too many uploads (at most 30 a minute). Try again in 42 s, after 10:00:42 UTC.',
          details: { limit: 'uploads', retryAfterSeconds: 42 },
        },
      }),
      { status: 429, headers: { 'Retry-After': '42' } },
    );
    const err = (await parseResponse(res).catch((e) => e)) as ApiError;
    expect(err.code).toBe('rate_limited');
    expect(err.retryAfterSeconds).toBe(42);
    expect(err.message).toMatch(
      /^Too many uploads \(at most 30 a minute\)\. Try again in 42 s, after 10:00:42 UTC\. \(You can try again at .+\.\)$/,
    );
    const now = new Date('2026-12-02T10:00:00Z');
    expect(rateLimitedMessage('m', 42, now)).toBe(
      `m (You can try again at ${new Date('2026-12-02T10:00:42Z').toLocaleTimeString(undefined, { hour: '2-digit', minute: '2-digit', second: '2-digit' })}.)`,
    );
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

describe('api(): a request the hub refused before doing anything is sent again after its Retry-After', () => {
  const refusal = (status: number, code: string, retryAfter: number) =>
    new Response(
      JSON.stringify({
        error: {
          code,
          message:
            code === 'checker_busy'
              ? `Every upload checker of this hub is busy and 0 uploads are waiting, so nothing was stored. Send it again in ${retryAfter} s (Retry-After).`
              : `Too many uploads (at most 30 a minute). Try again in ${retryAfter} s.`,
          details: code === 'rate_limited' ? { limit: 'uploads', retryAfterSeconds: retryAfter } : undefined,
        },
      }),
      { status, headers: { 'Retry-After': String(retryAfter), 'Content-Type': 'application/json' } },
    );
  const created = () => new Response(JSON.stringify({ submission: { id: 's1' } }), { status: 201 });

  /** fetch answering `answers` in turn (the last one again after), recording each request. */
  function fakeFetch(answers: (() => Response)[]) {
    const calls: { url: string; init: RequestInit }[] = [];
    vi.stubGlobal('fetch', async (url: string, init: RequestInit) => {
      calls.push({ url, init });
      return answers[Math.min(calls.length, answers.length) - 1]();
    });
    return calls;
  }

  /** Runs `request` to its end, letting every wait pass at once; the notices said meanwhile. */
  async function settle<T>(request: () => Promise<T>) {
    const notices: string[][] = [];
    const stop = onRetryNotices((m) => notices.push(m));
    const pending = request().then(
      (value) => ({ value, error: null as unknown }),
      (error: unknown) => ({ value: null, error }),
    );
    await vi.runAllTimersAsync();
    const out = await pending;
    stop();
    return { ...out, notices };
  }

  beforeEach(() => vi.useFakeTimers());
  afterEach(() => {
    vi.useRealTimers();
    vi.unstubAllGlobals();
  });

  it('503 checker_busy twice, then stored: the same form and Idempotency-Key three times, saying it is retrying', async () => {
    const calls = fakeFetch([
      () => refusal(503, 'checker_busy', 2),
      () => refusal(503, 'checker_busy', 1),
      created,
    ]);
    const form = new FormData();
    form.set('benchmark', 'toy-decode');
    const retries: [string, number][] = [];
    const r = await settle(() =>
      api<{ submission: { id: string } }>('/api/submissions', {
        form,
        headers: { 'Idempotency-Key': 'k-1' },
        onRetry: (m, s) => retries.push([m, s]),
      }),
    );
    expect(r.error).toBeNull();
    expect(r.value).toEqual({ submission: { id: 's1' } });
    expect(calls).toHaveLength(3);
    for (const c of calls) {
      expect(c.init.method).toBe('POST');
      expect(c.init.body).toBe(form);
      expect((c.init.headers as Record<string, string>)['Idempotency-Key']).toBe('k-1');
    }
    expect(retries).toEqual([
      ['The hub is busy checking uploads; retrying in 2 s.', 2],
      ['The hub is busy checking uploads; retrying in 1 s.', 1],
    ]);
    // The page-wide notice shows each wait and is cleared once the request went through.
    expect(r.notices).toEqual([
      [],
      ['The hub is busy checking uploads; retrying in 2 s.'],
      ['The hub is busy checking uploads; retrying in 1 s.'],
      [],
    ]);
  });

  it('429 rate_limited, then answered: sent once more after the wait', async () => {
    const calls = fakeFetch([() => refusal(429, 'rate_limited', 5), created]);
    const r = await settle(() => api('/api/submissions/s1/runs', { body: { mode: 'public' } }));
    expect(r.error).toBeNull();
    expect(calls).toHaveLength(2);
    expect(calls[1].init.body).toBe(JSON.stringify({ mode: 'public' }));
    expect(r.notices[1]).toEqual(['The hub is rate limiting requests; retrying in 5 s.']);
  });

  it('still busy after 3 retries: the refusal, with when to try again', async () => {
    const calls = fakeFetch([() => refusal(503, 'checker_busy', 1)]);
    const r = await settle(() => api('/api/submissions', { form: new FormData() }));
    expect(calls).toHaveLength(4);
    const err = r.error as ApiError;
    expect(err).toBeInstanceOf(ApiError);
    expect(err.code).toBe('checker_busy');
    expect(err.retryAfterSeconds).toBe(1);
    expect(err.message).toMatch(
      /nothing was stored\. Send it again in 1 s \(Retry-After\)\. \(You can try again at .+\.\)$/,
    );
    expect(r.notices.at(-1)).toEqual([]);
  });

  it('waits add up to at most 60 s: a second wait of 45 s is not sat out', async () => {
    const calls = fakeFetch([() => refusal(429, 'rate_limited', 45)]);
    const r = await settle(() => api('/api/teams/join', { body: { code: 'ABCDEF' } }));
    expect(calls).toHaveLength(2);
    expect((r.error as ApiError).code).toBe('rate_limited');
  });

  it('is not retried: a 429 that is a daily limit, a 503 without Retry-After, a 503 of another kind', async () => {
    const daily = () =>
      new Response(
        JSON.stringify({ error: { code: 'daily_limit_reached', message: 'Used all 1 official runs' } }),
        {
          status: 429,
          headers: { 'Retry-After': '3600' },
        },
      );
    const bare = () =>
      new Response(JSON.stringify({ error: { code: 'checker_busy', message: 'busy' } }), { status: 503 });
    const database = () =>
      new Response(JSON.stringify({ error: { code: 'database_unavailable', message: 'down' } }), {
        status: 503,
        headers: { 'Retry-After': '5' },
      });
    for (const answer of [daily, bare, database]) {
      const calls = fakeFetch([answer]);
      const r = await settle(() => api('/api/x', { body: {} }));
      expect(calls).toHaveLength(1);
      expect(r.error).toBeInstanceOf(ApiError);
      expect(r.notices).toEqual([[]]);
    }
  });

  it('an abort during the wait ends it: no second request', async () => {
    const calls = fakeFetch([() => refusal(503, 'checker_busy', 30), created]);
    const ctl = new AbortController();
    const pending = api('/api/submissions', { form: new FormData(), signal: ctl.signal }).catch(
      (e: unknown) => e,
    );
    await vi.advanceTimersByTimeAsync(1000);
    ctl.abort();
    const err = (await pending) as Error;
    expect(err.name).toBe('AbortError');
    await vi.runAllTimersAsync();
    expect(calls).toHaveLength(1);
  });
});
