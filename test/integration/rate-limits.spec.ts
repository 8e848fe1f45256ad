import request from 'supertest';
import { io, type Socket } from 'socket.io-client';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { Hub } from '../../apps/api/src/bootstrap';
import { toyStarter } from '../support/archives';
import { mkdirSync, rmSync } from 'node:fs';
import * as path from 'node:path';
import { ApiProc, HttpUser, startApi, stopProc } from '../support/agent-helpers';
import { createTestDatabase } from '../support/db';
import { startSecondReplica, startTestHub, TestHub } from '../support/hub';
import { freePort, ROOT } from '../support/quickstart';
import { hasRedis } from '../support/prerequisites';
import { signIn as signInLocal, TestUser, withToken } from '../support/users';

/** Every test client is on 127.0.0.1; behind the hub's trusted loopback proxy, this is its address. */
const from = (req: request.Test, ip: string) => req.set('X-Forwarded-For', ip);

let nextAddress = 1;
/**
 * A dev sign-in from an address of its own, so the users a test needs never spend the sign-in
 * limit of 127.0.0.1 (the one test of that limit signs in from addresses it names).
 */
async function signIn(hub: TestHub, login: string): Promise<TestUser> {
  const res = await from(
    hub.http.post('/api/auth/dev'),
    `10.77.${nextAddress >> 8}.${nextAddress++ & 255}`,
  ).send({ login });
  if (res.status !== 200) throw new Error(`dev sign-in failed: ${res.status} ${JSON.stringify(res.body)}`);
  const cookie = ([] as string[])
    .concat(res.headers['set-cookie'] ?? [])
    .map((c) => c.split(';')[0])
    .join('; ');
  return new TestUser(hub, cookie, res.body.csrfToken, res.body);
}

async function ownerWithTeam(hub: TestHub, login: string) {
  const owner = await signIn(hub, login);
  const res = await owner.post('/api/teams', { name: `${login} team` });
  if (res.status !== 201) throw new Error(`team creation failed: ${JSON.stringify(res.body)}`);
  return { owner, team: res.body as { id: string; inviteCode: string } };
}

const wrongCode = (i: number) => `WR${String(i).padStart(4, '2').replace(/[01]/g, '9')}`.slice(0, 6);

function expectRateLimited(res: request.Response, pattern: RegExp) {
  expect(res.status).toBe(429);
  expect(res.body.error.code).toBe('rate_limited');
  expect(res.body.error.message).toMatch(pattern);
  const retryAfter = Number(res.headers['retry-after']);
  expect(retryAfter).toBeGreaterThanOrEqual(1);
  expect(res.body.error.details.retryAfterSeconds).toBe(retryAfter);
  return retryAfter;
}

async function joinLockouts(org: TestUser, userId: string) {
  const res = await org.get(`/api/admin/audit?action=team.join_locked&target=${userId}`);
  expect(res.status).toBe(200);
  return res.body.items as {
    actor: { login: string };
    target: { kind: string; id: string };
    details: Record<string, unknown>;
  }[];
}

describe('rate limits on one hub', () => {
  let hub: TestHub;
  let org: TestUser;
  beforeAll(async () => {
    hub = await startTestHub({
      env: {
        ADMIN_LOGINS: 'rl-org',
        RATE_LIMIT_JOIN: '5/60',
        RATE_LIMIT_JOIN_LOCKOUT_SECONDS: '60',
        RATE_LIMIT_JOIN_LOCKOUT_MAX_SECONDS: '3600',
        RATE_LIMIT_SIGNIN: '3/60',
        RATE_LIMIT_AUTH_FAILURES: '3/60',
        RATE_LIMIT_CREATE: '3/60',
        RATE_LIMIT_UPLOADS: '2/60',
        RATE_LIMIT_RUNS: '2/60',
        RATE_LIMIT_SOCKET: '4/60',
        RATE_LIMIT_PUBLIC: '5/60',
      },
    });
    org = await signIn(hub, 'rl-org');
  });
  afterAll(async () => hub?.close());

  it('300 wrong invite codes in a minute: 429 within the first 20, none a join; then the right code is refused too, and the organizer sees it', async () => {
    const { owner, team } = await ownerWithTeam(hub, 'rl-owner');
    const guesser = await signIn(hub, 'rl-guesser');
    const statuses: number[] = [];
    let first429: request.Response | undefined;
    for (let i = 0; i < 300; i += 20) {
      const batch = await Promise.all(
        Array.from({ length: 20 }, (_, j) => guesser.post('/api/teams/join', { code: wrongCode(i + j) })),
      );
      for (const res of batch) {
        statuses.push(res.status);
        if (res.status === 429) first429 ??= res;
      }
    }
    expect(statuses).toHaveLength(300);
    expect(statuses.indexOf(429)).toBeGreaterThanOrEqual(0);
    expect(statuses.indexOf(429)).toBeLessThan(20);
    expect(statuses.filter((s) => s === 200)).toEqual([]);
    // Five attempts a minute reached the code check (404); every other one was refused unread.
    expect(statuses.filter((s) => s === 404)).toHaveLength(5);
    expect(statuses.filter((s) => s === 429)).toHaveLength(295);
    const wait = expectRateLimited(first429!, /locked out for 60 s, until \d\d:\d\d:\d\d UTC/);
    expect(wait).toBe(60);

    const right = await guesser.post('/api/teams/join', { code: team.inviteCode });
    expectRateLimited(right, /a correct one too/);
    const members = await owner.get(`/api/teams/${team.id}`);
    expect(members.body.members.map((m: { login: string }) => m.login)).toEqual(['rl-owner']);

    const entries = await joinLockouts(org, guesser.id);
    expect(entries).toHaveLength(1);
    expect(entries[0]).toMatchObject({
      actor: { login: 'rl-guesser' },
      target: { kind: 'user', id: guesser.id },
      details: { login: 'rl-guesser', attempts: 6, lockedSeconds: 60, lockout: 1, via: 'session' },
    });
    // Another user is not affected by the guesser's lockout.
    const other = await signIn(hub, 'rl-honest');
    expect((await other.post('/api/teams/join', { code: team.inviteCode })).status).toBe(200);
  });

  it('sign-ins per address: past the limit 429 with Retry-After; another address still signs in', async () => {
    const ip = '203.0.113.7';
    for (let i = 0; i < 3; i++)
      expect((await from(hub.http.post('/api/auth/dev'), ip).send({ login: `rl-si${i}` })).status).toBe(200);
    const refused = await from(hub.http.post('/api/auth/dev'), ip).send({ login: 'rl-si3' });
    expectRateLimited(
      refused,
      /Too many sign-ins from this address \(at most 3 a minute\)\. Try again in \d+ s/,
    );
    expect(refused.headers['set-cookie']).toBeUndefined();
    expect(
      (await from(hub.http.post('/api/auth/dev'), '203.0.113.70').send({ login: 'rl-si3' })).status,
    ).toBe(200);
  });

  it('refused API tokens per address: past the limit even a valid token from that address waits', async () => {
    const { owner, team } = await ownerWithTeam(hub, 'rl-tok');
    const created = await owner.post(`/api/teams/${team.id}/tokens`, { name: 'ci' });
    expect(created.status).toBe(201);
    const good = created.body.token as string;
    const ip = '203.0.113.8';
    const bad = 'dryft_pat_' + 'x'.repeat(40);
    for (let i = 0; i < 3; i++) {
      const res = await from(hub.http.get('/api/teams'), ip).set('Authorization', `Bearer ${bad}${i}`);
      expect(res.status).toBe(401);
    }
    expectRateLimited(
      await from(hub.http.get('/api/teams'), ip).set('Authorization', `Bearer ${bad}`),
      /API token was refused \(at most 3 a minute\)/,
    );
    expectRateLimited(
      await from(hub.http.get('/api/teams'), ip).set('Authorization', `Bearer ${good}`),
      /Try again/,
    );
    const elsewhere = await from(hub.http.get('/api/teams'), '203.0.113.80').set(
      'Authorization',
      `Bearer ${good}`,
    );
    expect(elsewhere.status).toBe(200);
  });

  it('team and token creation share one count per user; uploads count per team token', async () => {
    const { owner, team } = await ownerWithTeam(hub, 'rl-maker'); // 1
    expect((await owner.post('/api/teams', { name: 'rl maker two' })).status).toBe(201); // 2
    const token = await owner.post(`/api/teams/${team.id}/tokens`, { name: 'up' }); // 3
    expect(token.status).toBe(201);
    expectRateLimited(
      await owner.post(`/api/teams/${team.id}/tokens`, { name: 'more' }),
      /teams and API tokens created/,
    );
    expectRateLimited(await owner.post('/api/teams', { name: 'rl maker three' }), /at most 3 a minute/);

    const cli = withToken(hub, token.body.token);
    const file = { name: 'engine.tar.gz', content: await toyStarter() };
    for (let i = 0; i < 2; i++) {
      const res = await cli.upload('/api/submissions', { benchmark: 'toy-decode' }, file);
      expect(res.status, JSON.stringify(res.body)).toBeLessThan(300);
    }
    const third = await cli.upload('/api/submissions', { benchmark: 'toy-decode' }, file);
    expectRateLimited(third, /Too many uploads \(at most 2 a minute\)/);
    // Nothing was stored for the refused upload.
    const listed = await cli.get('/api/submissions?benchmark=toy-decode');
    expect(listed.body.items).toHaveLength(2);
  });

  it('runs started per user: past the limit 429 and no run is created', async () => {
    const { owner } = await ownerWithTeam(hub, 'rl-runner');
    const sub = await owner.upload(
      '/api/submissions',
      { benchmark: 'toy-decode' },
      { name: 'engine.tar.gz', content: await toyStarter() },
    );
    expect(sub.status, JSON.stringify(sub.body)).toBeLessThan(300);
    const id = sub.body.submission.id as string;
    for (let i = 0; i < 2; i++)
      expect((await owner.post(`/api/submissions/${id}/runs`, { mode: 'public' })).status).toBe(201);
    const third = await owner.post(`/api/submissions/${id}/runs`, { mode: 'public' });
    expectRateLimited(third, /Too many runs started \(at most 2 a minute\)\. Try again in \d+ s/);
    const runs = await owner.get(`/api/runs?submission=${id}`);
    expect(runs.body.items).toHaveLength(2);
  });

  it('public reads per address: past the limit 429, reads with credentials are not counted', async () => {
    const ip = '203.0.113.9';
    for (let i = 0; i < 5; i++) expect((await from(hub.http.get('/api/benchmarks'), ip)).status).toBe(200);
    const refused = await from(hub.http.get('/api/leaderboards/toy-decode'), ip);
    expectRateLimited(refused, /Too many reads from this address \(at most 5 a minute\)/);
    expect((await from(org.get('/api/benchmarks'), ip)).status).toBe(200);
    expect((await hub.http.get('/api/health').set('X-Forwarded-For', ip)).status).toBe(200);
  });

  it('a flood of /live and /agents connections is refused at the handshake, with when to retry', async () => {
    const open: Socket[] = [];
    const attempt = (nsp: string, ip: string, auth: Record<string, string> = {}) =>
      new Promise<
        | { ok: true }
        | { ok: false; message: string; data: { code: string; details?: { retryAfterSeconds: number } } }
      >((resolve) => {
        const s = io(`${hub.baseUrl}${nsp}`, {
          transports: ['websocket'],
          forceNew: true,
          reconnection: false,
          auth,
          extraHeaders: { 'x-forwarded-for': ip },
        });
        open.push(s);
        s.once('connect', () => resolve({ ok: true }));
        s.once('connect_error', (err: Error & { data?: unknown }) =>
          resolve({ ok: false, message: err.message, data: err.data as never }),
        );
      });
    try {
      const ip = '203.0.113.10';
      const results = [];
      for (let i = 0; i < 8; i++) results.push(await attempt('/live', ip));
      expect(results.slice(0, 4).every((r) => r.ok)).toBe(true);
      for (const r of results.slice(4)) {
        expect(r.ok).toBe(false);
        if (r.ok) continue;
        expect(r.data.code).toBe('rate_limited');
        expect(r.message).toMatch(
          /Too many connection attempts to \/live from this address \(at most 4 a minute\)\. Try again in \d+ s/,
        );
        expect(r.data.details?.retryAfterSeconds).toBeGreaterThanOrEqual(1);
      }
      // /agents counts on its own, and refuses before looking at the token.
      const agents = [];
      for (let i = 0; i < 5; i++)
        agents.push(await attempt('/agents', ip, { token: 'dryft_agt_not-a-token' }));
      expect(agents.slice(0, 4).map((r) => (r.ok ? 'ok' : r.data.code))).not.toContain('rate_limited');
      const last = agents[4];
      expect(last.ok).toBe(false);
      if (!last.ok) {
        expect(last.data.code).toBe('rate_limited');
        expect(last.message).toMatch(/connection attempts to \/agents/);
      }
      // Another address connects.
      expect(await attempt('/live', '203.0.113.11')).toEqual({ ok: true });
    } finally {
      for (const s of open) s.close();
    }
  });
});

describe('the join lockout grows', () => {
  let hub: TestHub;
  let org: TestUser;
  beforeAll(async () => {
    hub = await startTestHub({
      env: {
        ADMIN_LOGINS: 'rlg-org',
        RATE_LIMIT_JOIN: '3/60',
        RATE_LIMIT_JOIN_LOCKOUT_SECONDS: '1',
        RATE_LIMIT_JOIN_LOCKOUT_MAX_SECONDS: '4',
      },
    });
    org = await signIn(hub, 'rlg-org');
  });
  afterAll(async () => hub?.close());

  it('1 s, then 2 s, then 4 s (the longest), each lockout audited', async () => {
    const u = await signIn(hub, 'rlg-guesser');
    const waits: number[] = [];
    for (let round = 0; round < 4; round++) {
      for (let i = 0; i < 3; i++)
        expect((await u.post('/api/teams/join', { code: 'ZZZZZZ' })).status).toBe(404);
      const refused = await u.post('/api/teams/join', { code: 'ZZZZZZ' });
      const wait = expectRateLimited(refused, /locked out for \d+ s/);
      waits.push(wait);
      // Still locked just before the end.
      if (wait > 1) expect((await u.post('/api/teams/join', { code: 'ZZZZZZ' })).status).toBe(429);
      await new Promise((r) => setTimeout(r, wait * 1000 + 150));
    }
    expect(waits).toEqual([1, 2, 4, 4]);
    const entries = await joinLockouts(org, u.id);
    expect(entries.map((e) => e.details.lockedSeconds)).toEqual([4, 4, 2, 1]);
    expect(entries.map((e) => e.details.lockout)).toEqual([4, 3, 2, 1]);
  }, 30_000);
});

const redisUrl = inject('redisUrl');
const reachable = await hasRedis(redisUrl);

describe.skipIf(!reachable)('rate limits across two replicas on Redis', () => {
  let a: TestHub;
  let b: Hub & { baseUrl: string };
  beforeAll(async () => {
    const env = {
      REDIS_URL: redisUrl,
      REDIS_STREAM: `dryft-test-rl-${process.pid}-${Date.now()}`,
      RATE_LIMIT_JOIN: '4/60',
      RATE_LIMIT_SOCKET: '4/60',
    };
    a = await startTestHub({ env });
    b = await startSecondReplica(a, env);
  });
  afterAll(async () => {
    await b?.close();
    await a?.close();
  });

  it('one count for a user whichever replica answers: the lockout holds on both', async () => {
    const u = await signInLocal(a, 'rlr-guesser');
    const onB = (path: string, body: object) =>
      request(b.app.getHttpServer())
        .post(path)
        .set('Cookie', u.cookie)
        .set('X-CSRF-Token', u.csrf)
        .send(body);
    const statuses: number[] = [];
    for (let i = 0; i < 8; i++) {
      const res =
        i % 2
          ? await onB('/api/teams/join', { code: 'ZZZZZZ' })
          : await u.post('/api/teams/join', { code: 'ZZZZZZ' });
      statuses.push(res.status);
    }
    expect(statuses).toEqual([404, 404, 404, 404, 429, 429, 429, 429]);
    expectRateLimited(await onB('/api/teams/join', { code: 'ZZZZZZ' }), /locked out/);
    expectRateLimited(await u.post('/api/teams/join', { code: 'ZZZZZZ' }), /locked out/);
  });

  it('socket handshakes from one address count across replicas', async () => {
    const open: Socket[] = [];
    const attempt = (url: string) =>
      new Promise<string>((resolve) => {
        const s = io(`${url}/live`, {
          transports: ['websocket'],
          forceNew: true,
          reconnection: false,
          extraHeaders: { 'x-forwarded-for': '198.51.100.4' },
        });
        open.push(s);
        s.once('connect', () => resolve('ok'));
        s.once('connect_error', (err: Error & { data?: { code?: string } }) =>
          resolve(err.data?.code ?? err.message),
        );
      });
    try {
      const got: string[] = [];
      for (let i = 0; i < 6; i++) got.push(await attempt(i % 2 ? b.baseUrl : a.baseUrl));
      expect(got).toEqual(['ok', 'ok', 'ok', 'ok', 'rate_limited', 'rate_limited']);
    } finally {
      for (const s of open) s.close();
    }
  });
});

describe.skipIf(!reachable)('the abuse tier: two real API processes on one Postgres and one Redis', () => {
  let a: ApiProc;
  let b: ApiProc;
  let db: { url: string; drop: () => Promise<void> };
  const dataDir = path.join(ROOT, '.data', 'test', `rate-limits-${process.pid}-${Date.now()}`);
  beforeAll(async () => {
    db = await createTestDatabase();
    mkdirSync(dataDir, { recursive: true });
    const env = {
      REDIS_URL: redisUrl,
      REDIS_STREAM: `dryft-test-rlp-${process.pid}-${Date.now()}`,
      ADMIN_LOGINS: 'rlp-org',
      // The production defaults of the join limit.
      RATE_LIMIT_JOIN: '5/60',
      RATE_LIMIT_JOIN_LOCKOUT_SECONDS: '60',
      RATE_LIMIT_JOIN_LOCKOUT_MAX_SECONDS: '3600',
    };
    [a, b] = await Promise.all([
      startApi({ dbUrl: db.url, port: await freePort(), dataDir: path.join(dataDir, 'a'), env }),
      startApi({ dbUrl: db.url, port: await freePort(), dataDir: path.join(dataDir, 'b'), env }),
    ]);
  }, 90_000);
  afterAll(async () => {
    await stopProc(a);
    await stopProc(b);
    await db?.drop().catch(() => undefined);
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('300 wrong codes in a minute, alternating replicas: 429 within the first 20, none a join, the lockout on both', async () => {
    const owner = await HttpUser.signIn(a.url, 'rlp-owner');
    const team = (await owner.post('/api/teams', { name: 'rlp team' })).body as {
      id: string;
      inviteCode: string;
    };
    const guesser = await HttpUser.signIn(a.url, 'rlp-guesser');
    const onB = new HttpUser(b.url, guesser.cookie, guesser.csrf, guesser.login);
    const started = Date.now();
    const statuses: number[] = [];
    for (let i = 0; i < 300; i += 20) {
      const batch = await Promise.all(
        Array.from({ length: 20 }, (_, j) =>
          ((i + j) % 2 ? onB : guesser).post('/api/teams/join', { code: wrongCode(i + j) }),
        ),
      );
      statuses.push(...batch.map((r) => r.status));
    }
    expect(Date.now() - started).toBeLessThan(60_000);
    expect(statuses.indexOf(429)).toBeGreaterThanOrEqual(0);
    expect(statuses.indexOf(429)).toBeLessThan(20);
    expect(statuses.filter((s) => s === 200)).toEqual([]);
    expect(statuses.filter((s) => s === 404)).toHaveLength(5);
    for (const via of [guesser, onB]) {
      const right = await via.post('/api/teams/join', { code: team.inviteCode });
      expect(right.status).toBe(429);
      expect(right.body.error.code).toBe('rate_limited');
    }
    expect((await owner.get(`/api/teams/${team.id}`)).body.members).toHaveLength(1);
    const org = await HttpUser.signIn(b.url, 'rlp-org');
    const audit = await org.get('/api/admin/audit?action=team.join_locked');
    expect(audit.body.items).toHaveLength(1);
    expect(audit.body.items[0]).toMatchObject({
      actor: { login: 'rlp-guesser' },
      details: { lockedSeconds: 60 },
    });
  }, 90_000);
});
