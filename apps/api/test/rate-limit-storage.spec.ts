import { createClient } from 'redis';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../src/config/config';
import { MemoryRateLimitStorage, RedisRateLimitStorage } from '../src/rate-limits/rate-limit-storage';
import { clientIp, trustedProxies } from '../src/rate-limits/client-ip';
import { RateLimiter } from '../src/rate-limits/rate-limiter';
import { loadConfig } from '../src/config/config';
import type { AuditService } from '../src/audit/audit.service';
import type { IncomingMessage, ServerResponse } from 'node:http';

describe('rate-limit storage in memory', () => {
  it('admits the limit per window, blocks the next, and counts again after the block', async () => {
    let now = 1_000_000;
    const s = new MemoryRateLimitStorage({}, () => now);
    const hit = () => s.increment('ip:1', 60_000, 3, 60_000, 'signin');
    for (let i = 1; i <= 3; i++) expect(await hit()).toMatchObject({ totalHits: i, isBlocked: false });
    expect(await hit()).toMatchObject({ isBlocked: true, blockStarted: true, timeToBlockExpire: 60 });
    now += 30_000;
    expect(await hit()).toMatchObject({ isBlocked: true, blockStarted: false, timeToBlockExpire: 30 });
    expect(await s.blockedFor('ip:1', 'signin')).toBe(30);
    // Another key and another limit are untouched.
    expect(await s.increment('ip:2', 60_000, 3, 60_000, 'signin')).toMatchObject({ isBlocked: false });
    expect(await s.increment('ip:1', 60_000, 3, 60_000, 'uploads')).toMatchObject({ isBlocked: false });
    now += 30_001;
    expect(await hit()).toMatchObject({ totalHits: 1, isBlocked: false });
    await s.close();
  });

  it('grows a lockout ×2 per lockout up to the longest, and forgets after the memory', async () => {
    let now = 0;
    const s = new MemoryRateLimitStorage({ join: { maxMs: 4_000, memoryMs: 100_000 } }, () => now);
    const lockout = async () => {
      for (let i = 0; i < 2; i++) await s.increment('user:u', 60_000, 2, 1_000, 'join');
      const r = await s.increment('user:u', 60_000, 2, 1_000, 'join');
      now += r.timeToBlockExpire * 1000;
      return [r.timeToBlockExpire, r.strikes];
    };
    expect(await lockout()).toEqual([1, 1]);
    expect(await lockout()).toEqual([2, 2]);
    expect(await lockout()).toEqual([4, 3]);
    expect(await lockout()).toEqual([4, 4]);
    now += 100_001;
    expect(await lockout()).toEqual([1, 1]);
    await s.close();
  });
});

describe('rate-limit storage on Redis', () => {
  it('lets requests through, and says so, while Redis cannot be reached', async () => {
    const client = createClient({ url: 'redis://127.0.0.1:1', disableOfflineQueue: true });
    const said: string[] = [];
    const s = new RedisRateLimitStorage(client, 'test', {}, (m) => said.push(m));
    for (let i = 0; i < 5; i++)
      expect(await s.increment('ip:1', 60_000, 1, 60_000, 'signin')).toMatchObject({ isBlocked: false });
    expect(await s.blockedFor('ip:1', 'auth_failures')).toBe(0);
    expect(said).toHaveLength(1);
    expect(said[0]).toMatch(/Redis unreachable .* let through/);
  });
});

describe('rate-limit settings', () => {
  it('are COUNT/SECONDS, validated at boot with what to write', () => {
    expect(loadConfig({}, '/srv').RATE_LIMIT_JOIN).toEqual({ limit: 5, seconds: 60 });
    expect(loadConfig({ RATE_LIMIT_UPLOADS: ' 7 / 120 ' }, '/srv').RATE_LIMIT_UPLOADS).toEqual({
      limit: 7,
      seconds: 120,
    });
    const problems = (env: Record<string, string>) => {
      try {
        loadConfig(env, '/srv');
        return [];
      } catch (err) {
        return (err as ConfigError).problems;
      }
    };
    expect(problems({ RATE_LIMIT_JOIN: 'five' })[0]).toMatch(/RATE_LIMIT_JOIN: write it as COUNT\/SECONDS/);
    expect(problems({ RATE_LIMIT_SOCKET: '0/60' })[0]).toMatch(
      /RATE_LIMIT_SOCKET: COUNT and SECONDS must both be at least 1/,
    );
    expect(
      problems({ RATE_LIMIT_JOIN_LOCKOUT_SECONDS: '600', RATE_LIMIT_JOIN_LOCKOUT_MAX_SECONDS: '60' })[0],
    ).toMatch(/RATE_LIMIT_JOIN_LOCKOUT_MAX_SECONDS: must be at least RATE_LIMIT_JOIN_LOCKOUT_SECONDS/);
  });
});

describe('the address a limit counts', () => {
  it('is the socket address, or behind a loopback proxy the nearest forwarded hop; IPv6 by /64', () => {
    expect(clientIp('203.0.113.5', '198.51.100.1')).toBe('203.0.113.5');
    expect(clientIp('127.0.0.1', '198.51.100.1, 203.0.113.9')).toBe('203.0.113.9');
    expect(clientIp('::ffff:127.0.0.1', '198.51.100.1, 127.0.0.1')).toBe('198.51.100.1');
    expect(clientIp('::ffff:10.0.0.2', undefined)).toBe('10.0.0.2');
    expect(clientIp('2001:db8:1:2:aaaa::1', undefined)).toBe(clientIp('2001:db8:1:2:bbbb::9', undefined));
    expect(clientIp('2001:db8:1:2::1', undefined)).not.toBe(clientIp('2001:db8:1:3::1', undefined));
  });
});

describe('trusted proxies', () => {
  it('answer the same on every call, remembered or not, and never trust what is not an address', () => {
    const proxies = trustedProxies('loopback, 10.0.0.0/8');
    if ('problem' in proxies) throw new Error(proxies.problem);
    for (let round = 0; round < 3; round++) {
      expect(proxies.trusted('127.0.0.1')).toBe(true);
      expect(proxies.trusted('10.1.2.3')).toBe(true);
      expect(proxies.trusted('203.0.113.5')).toBe(false);
      expect(proxies.trusted('::1')).toBe(true);
      expect(proxies.trusted('not an address')).toBe(false);
    }
    // Past the memo's size it still answers right (the memo is cleared, not trusted blindly).
    for (let i = 0; i < 5000; i++) proxies.trusted(`198.51.${i >> 8}.${i & 255}`);
    expect(proxies.trusted('10.9.9.9')).toBe(true);
    expect(proxies.trusted('198.51.0.1')).toBe(false);
  });
});

describe('public reads per client', () => {
  const limiter = () =>
    new RateLimiter(
      { close: async () => undefined } as never,
      loadConfig({ RATE_LIMIT_PUBLIC: '2/60', TRUST_PROXY: 'loopback' }),
      {} as AuditService,
    );
  const read = (socket: object, xff?: string) =>
    ({
      method: 'GET',
      url: '/api/leaderboards/toy-decode',
      headers: xff ? { 'x-forwarded-for': xff } : {},
      socket,
    }) as unknown as IncomingMessage;
  const response = () => {
    const headers: Record<string, unknown> = {};
    return {
      headers,
      setHeader: (n: string, v: unknown) => (headers[n] = v),
      end: () => undefined,
    } as unknown as ServerResponse;
  };

  it('count a keep-alive connection as its address, and a proxied request as its forwarded client', () => {
    const rl = limiter();
    const direct = { remoteAddress: '203.0.113.5' };
    expect(rl.refusePublicRead(read(direct), response())).toBe(false);
    expect(rl.refusePublicRead(read(direct), response())).toBe(false);
    expect(rl.refusePublicRead(read(direct), response())).toBe(true);
    // Another connection from the same address shares its bucket.
    expect(rl.refusePublicRead(read({ remoteAddress: '::ffff:203.0.113.5' }), response())).toBe(true);
    // One proxy connection carries many clients: each request is counted as its own forwarded client,
    // whatever the connection's earlier requests were.
    const proxy = { remoteAddress: '127.0.0.1' };
    expect(rl.refusePublicRead(read(proxy, '198.51.100.1'), response())).toBe(false);
    expect(rl.refusePublicRead(read(proxy, '198.51.100.2'), response())).toBe(false);
    expect(rl.refusePublicRead(read(proxy, '198.51.100.1'), response())).toBe(false);
    expect(rl.refusePublicRead(read(proxy, '198.51.100.1'), response())).toBe(true);
    expect(rl.refusePublicRead(read(proxy, '203.0.113.5'), response())).toBe(true);
    expect(rl.refusePublicRead(read(proxy), response())).toBe(false);
    expect(rl.refusePublicRead(read(proxy, '198.51.100.2'), response())).toBe(false);
  });
});
