import { createServer, connect, type Server, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import type { Pool } from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { AgentSockets } from '../../apps/api/src/agents/agent-sockets';
import { toyStarter } from '../support/archives';
import { startTestHub, TestHub } from '../support/hub';
import { OwnPostgres } from '../support/own-postgres';
import { hasRedis } from '../support/prerequisites';
import { TestAgent } from '../support/test-agent';
import { ownerWithTeam } from '../support/users';

const redisUrl = inject('redisUrl');
const reachable = await hasRedis(redisUrl);

async function until<T>(what: string, check: () => Promise<T | undefined | false>, ms = 15_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await check();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/**
 * A TCP relay to the test Redis that the test can cut and restore: Redis "goes away" for this hub
 * alone, never for the machine's other users of the shared server.
 */
class RedisRelay {
  private server?: Server;
  private readonly open = new Set<Socket>();
  /** Each connection from the hub with its connection to Redis. */
  private readonly pairs = new Set<[client: Socket, upstream: Socket]>();
  port = 0;

  constructor(private readonly target: URL) {}

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  /** Listens (again: on the same port after a cut, so the hub's client finds it back). */
  async start(): Promise<void> {
    const server = createServer((client) => {
      const upstream = connect(Number(this.target.port || 6379), this.target.hostname);
      const pair: [Socket, Socket] = [client, upstream];
      this.pairs.add(pair);
      for (const s of pair) {
        this.open.add(s);
        s.on('close', () => {
          this.open.delete(s);
          this.pairs.delete(pair);
        });
        s.on('error', () => s.destroy());
      }
      client.pipe(upstream).pipe(client);
    });
    await new Promise<void>((resolve) => server.listen(this.port, '127.0.0.1', resolve));
    this.port = (server.address() as AddressInfo).port;
    this.server = server;
  }

  /**
   * Stops passing on what the hub's open connections send: a command written from now on stays
   * unanswered (in flight) until {@link reset}. Connections opened later pass as before.
   */
  hold(): void {
    for (const [client, upstream] of this.pairs) {
      client.unpipe(upstream);
      client.pause();
    }
  }

  /**
   * Resets every open connection (TCP RST, as a Redis that crashed or a middlebox that dropped the
   * link): the hub reads `ECONNRESET` with its commands in flight. Still listening: the hub reconnects.
   */
  reset(): void {
    for (const s of this.open) s.resetAndDestroy();
  }

  /** Refuses new connections and cuts the open ones. */
  async cut(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    for (const s of this.open) s.destroy();
    await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
  }
}

/** JSON log lines captured from the hub, parsed. */
type LogLine = Record<string, unknown> & { level: string; msg: string; context?: string };

describe.skipIf(!reachable)('JSON logs with request and run ids; readiness with Redis', () => {
  let hub: TestHub;
  let relay: RedisRelay;
  const lines: LogLine[] = [];

  beforeAll(async () => {
    relay = new RedisRelay(new URL(redisUrl));
    await relay.start();
    hub = await startTestHub({
      env: {
        LOG_FORMAT: 'json',
        REDIS_URL: relay.url,
        REDIS_STREAM: `dryft-test-logs-${process.pid}-${Date.now()}`,
        AGENT_LEASE_SECONDS: '2',
        DEADLINE_GRACE_SECONDS: '0',
      },
      logLevels: ['error', 'warn', 'log'],
      logWrite: (line) => lines.push(JSON.parse(line) as LogLine),
    });
  });
  afterAll(async () => {
    await hub?.close();
    await relay?.cut();
  });

  it('is live, and ready with every check up (Redis included)', async () => {
    expect((await hub.http.get('/api/health/live')).body).toMatchObject({ status: 'ok' });
    const ready = await hub.http.get('/api/health/ready');
    expect(ready.status).toBe(200);
    expect(ready.body).toMatchObject({
      status: 'ok',
      checks: { database: 'up', migrations: 'up', redis: 'up', sockets: 'up' },
    });
    // The old route answers as before.
    expect((await hub.http.get('/api/health')).body).toMatchObject({ status: 'ok', db: 'up' });
  });

  it('gives every response a request id: the caller’s X-Request-Id echoed, else a new one', async () => {
    const given = await hub.http.get('/api/health/live').set('X-Request-Id', 'edge-7f3a');
    expect(given.headers['x-request-id']).toBe('edge-7f3a');
    const made = await hub.http.get('/api/health/live');
    expect(made.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
    const refused = await hub.http.get('/api/health/live').set('X-Request-Id', 'not a token');
    expect(refused.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
  });

  it("puts the run id on the sweeper's line about a run, with no request id (no request made it)", async () => {
    const { owner } = await ownerWithTeam(hub, 'logs-owner');
    const sub = (
      await owner.upload(
        '/api/submissions',
        { benchmark: 'toy-decode' },
        { name: 'logged.tar.gz', content: await toyStarter() },
      )
    ).body.submission.id;
    const run = (await owner.post(`/api/submissions/${sub}/runs`, { mode: 'public' })).body.run as {
      id: string;
    };
    await new TestAgent(hub, 'silent-agent').claim(run.id);
    await hub.dataSource.query(`UPDATE runs SET deadline_at = now() - interval '1 second' WHERE id = $1`, [
      run.id,
    ]);
    const line = await until('the sweeper to log the run', async () =>
      lines.find((l) => l.context === 'RunSweeper' && l.runId === run.id),
    );
    expect(line).toMatchObject({
      level: 'warn',
      msg: `run ${run.id} stopped at its whole-run deadline`,
      runId: run.id,
      time: expect.any(String),
    });
    expect(line).not.toHaveProperty('requestId');
  });

  it('leaves nothing unhandled when Redis resets the link with commands in flight, and recovers', async () => {
    const unhandled: unknown[] = [];
    const record = (reason: unknown) => void unhandled.push(reason);
    process.on('unhandledRejection', record);
    process.on('uncaughtException', record);
    try {
      relay.hold();
      // In flight when the link resets: a nudge to the other replicas (a PUBLISH that the streams
      // adapter sends without waiting on it), a readiness probe (PING), the adapter's XREAD.
      hub.app.get(AgentSockets).nudgeReplicas();
      const probe = hub.http.get('/api/health/ready');
      await new Promise((r) => setTimeout(r, 300));
      relay.reset();
      await probe;
      await until('readiness back', async () => (await hub.http.get('/api/health/ready')).status === 200);
      // Node reports a rejection nobody handled once the microtasks after it have run.
      await new Promise((r) => setTimeout(r, 100));
    } finally {
      process.off('unhandledRejection', record);
      process.off('uncaughtException', record);
    }
    expect(unhandled).toEqual([]);
  });

  it('answers 503 naming redis when Redis is unreachable, on a line that carries the request id', async () => {
    await relay.cut();
    const notReady = await until('readiness to fail', async () => {
      const res = await hub.http.get('/api/health/ready').set('X-Request-Id', 'probe-redis-1');
      return res.status === 503 ? res : undefined;
    });
    expect(notReady.body).toMatchObject({
      status: 'not_ready',
      failing: ['redis'],
      checks: { database: 'up', migrations: 'up', sockets: 'up', redis: expect.stringMatching(/^down: /) },
    });
    expect(notReady.body.message).toMatch(/^not ready: redis down: /);
    expect(notReady.headers['retry-after']).toBeDefined();
    const logged = lines.find((l) => l.context === 'Health' && l.requestId === 'probe-redis-1');
    expect(logged).toMatchObject({ level: 'warn', msg: notReady.body.message });
    // Liveness does not depend on Redis: a restart would not bring it back.
    expect((await hub.http.get('/api/health/live')).status).toBe(200);
  });

  it('is ready again once Redis is back', async () => {
    await relay.start();
    const ready = await until('readiness back', async () => {
      const res = await hub.http.get('/api/health/ready');
      return res.status === 200 ? res : undefined;
    });
    expect(ready.body.checks.redis).toBe('up');
  });

  it('shuts down while Redis is unreachable: no client waits for a reconnect that may never come', async () => {
    await relay.cut();
    await until('readiness to fail', async () => (await hub.http.get('/api/health/ready')).status === 503);
    // Within the hook's own timeout: a QUIT queued behind a reconnect used to hang here for good.
    const closing = hub.close();
    hub = undefined as unknown as TestHub;
    await closing;
  });
});

describe('readiness when Postgres is unreachable', () => {
  let pg: OwnPostgres;
  let hub: TestHub;

  beforeAll(async () => {
    pg = await OwnPostgres.create('ready-outage-pg');
    hub = await startTestHub({ databaseUrl: pg.url, env: { DATABASE_POOL_MAX: '6' } });
  });
  afterAll(async () => {
    await hub?.close();
    pg?.destroy();
  });

  it('opens its pool with DATABASE_POOL_MAX connections at most', () => {
    const pool = (hub.dataSource.driver as unknown as { master: Pool }).master;
    expect(pool.options.max).toBe(6);
  });

  it('answers 503 naming the database while it is down, and 200 again once it is back', async () => {
    expect((await hub.http.get('/api/health/ready')).body).toMatchObject({
      status: 'ok',
      checks: { database: 'up', migrations: 'up', redis: 'not configured', sockets: 'up' },
    });
    pg.stop();
    try {
      const res = await hub.http.get('/api/health/ready');
      expect(res.status).toBe(503);
      expect(res.body.failing).toEqual(expect.arrayContaining(['database']));
      expect(res.body.checks.database).toMatch(/^down: /);
      expect(res.body.message).toMatch(/^not ready: database down: /);
      expect((await hub.http.get('/api/health/live')).status).toBe(200);
    } finally {
      pg.start();
    }
    await until('readiness back', async () => (await hub.http.get('/api/health/ready')).status === 200);
  });
});
