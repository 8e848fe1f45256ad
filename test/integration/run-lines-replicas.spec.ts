import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createClient } from 'redis';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { Hub } from '../../apps/api/src/bootstrap';
import { RedisRunLines, RemoteRunLines } from '../../apps/api/src/live/remote-run-lines';
import { HttpUser, RunWatcher, toyStarter, until } from '../support/agent-helpers';
import { startSecondReplica, startTestHub, TestHub } from '../support/hub';
import { freePort } from '../support/quickstart';
import { available, hasRedis } from '../support/prerequisites';
import { TestAgent } from '../support/test-agent';

/**
 * Issue 20, item 4: a stored batch crosses to the replicas that have watchers of its run, and to no
 * other; while no other replica listens, the storing one sends only a marker of each batch. Two Nest
 * apps on one Postgres and one real Redis; the agent's lines are stored on A.
 */

const redisUrl = inject('redisUrl');
const reachable = await hasRedis(redisUrl);

/** Replica A (with its own fresh database) and replica B on the same database, both on `env`'s Redis. */
async function twoReplicas(env: Record<string, string>): Promise<[TestHub, Hub & { baseUrl: string }]> {
  const a = await startTestHub({ env });
  const b = await startSecondReplica(a, env);
  return [a, b];
}

describe.skipIf(!reachable)('run lines across replicas: only to replicas that watch the run', () => {
  const stream = `runlog-${process.pid}-${Date.now()}`;
  let a: TestHub;
  let b: Hub & { baseUrl: string };
  let redis: ReturnType<typeof createClient>;
  /** How many connections listen to a run's channel, as Redis counts them. */
  const listeners = async (runId: string) =>
    Number(Object.values(await redis.pubSubNumSub(`${stream}:runlog:${runId}`))[0] ?? 0);

  beforeAll(async () => {
    [a, b] = await twoReplicas({ REDIS_URL: redisUrl, REDIS_STREAM: stream });
    redis = createClient({ url: redisUrl });
    await redis.connect();
  });
  afterAll(async () => {
    await redis?.quit().catch(() => undefined);
    await b?.close();
    await a?.close();
  });

  it('B decodes none of a run nobody watches on B; a watcher joining B mid-run gets every line once, in order; B unsubscribes when it leaves', async () => {
    const remoteB = b.app.get(RemoteRunLines) as RedisRunLines;
    expect(remoteB).toBeInstanceOf(RedisRunLines);
    const owner = await HttpUser.signIn(a.baseUrl, 'runlog-owner');
    await owner.createTeam();
    const runId = (await owner.startRun(await owner.upload(await toyStarter()))).id;
    const agent = new TestAgent(a);
    await agent.claim(runId);
    let n = 0;
    const batch = () => agent.log(runId, ...Array.from({ length: 20 }, () => `line ${++n}`));

    // (1) Watched on A only: A delivers locally (and listens too, for lines stored elsewhere, say
    // after the agent reconnected to B), B never hears of the run.
    const onA = new RunWatcher(a.baseUrl, { cookie: owner.cookie });
    expect((await onA.join(runId)).ok).toBe(true);
    for (let i = 0; i < 20; i++) await batch();
    await until('A has every line', () => onA.lastSeq >= n, 5_000);
    expect(await listeners(runId)).toBe(1);
    expect(remoteB.received).toEqual({ batches: 0, lines: 0, markers: 0 });
    expect(remoteB.watching).not.toContain(runId);
    // Heard by no other replica (A's own subscription does not count): once the reply to its first
    // PUBLISH says so, A sends only markers of the seq stored up to, not the lines. The reply comes
    // back asynchronously, so on a busy box the next batch may already have gone out as lines (CI:
    // 2 and 18); every batch after that is a marker.
    const remoteA = a.app.get(RemoteRunLines) as RedisRunLines;
    expect(remoteA.sent.batches + remoteA.sent.markers).toBe(20);
    expect(remoteA.sent.batches).toBeGreaterThanOrEqual(1);
    expect(remoteA.sent.batches).toBeLessThanOrEqual(3);

    // (2) A watcher joins B while A keeps storing.
    let streaming = true;
    const stream = (async () => {
      while (streaming) {
        await batch();
        await new Promise((r) => setTimeout(r, 2));
      }
    })();
    await until('the stream is on', () => n >= 800, 10_000);
    const onB = new RunWatcher(b.baseUrl, { cookie: owner.cookie });
    expect((await onB.join(runId)).ok).toBe(true);
    await until('B subscribed to the run', async () => (await listeners(runId)) === 2, 5_000);
    await until('B gets live lines from A', () => remoteB.received.lines >= 400, 10_000);
    // B first heard a marker (and read what it lacked from the database), then A sent lines again.
    expect(remoteB.received.markers).toBeGreaterThanOrEqual(1);
    streaming = false;
    await stream;
    await until('every line on B', () => onB.lastSeq >= n, 10_000);
    await new Promise((r) => setTimeout(r, 200)); // anything late would be a duplicate
    onB.assertContiguous();
    expect(onB.lines.length).toBe(n);
    onA.assertContiguous();
    expect(onA.lines.length).toBe(n);

    // (3) The watcher leaves B: B stops listening, and the next batches never reach it.
    expect((await onB.socket.emitWithAck('run.leave', { runId })).ok).toBe(true);
    await until('B unsubscribed', async () => (await listeners(runId)) === 1, 5_000);
    expect(remoteB.watching).not.toContain(runId);
    const decoded = { ...remoteB.received };
    for (let i = 0; i < 5; i++) await batch();
    await until('A has the new lines', () => onA.lastSeq >= n, 5_000);
    expect(remoteB.received).toEqual(decoded);
    onA.close();
    onB.close();
  });
});

const REDIS_SERVER = '/usr/bin/redis-server';
const hasRedisServer = available(
  "redis-server (a Redis of the test's own, to stop and start)",
  spawnSync(REDIS_SERVER, ['--version']).status === 0,
  'apt-get install redis-server',
);

/**
 * Redis goes away mid-run (a Redis of this test's own, killed and started again on the same port):
 * the storing replica's watcher keeps getting every line at once; the other replica's watcher gets
 * what was stored meanwhile as soon as its subscriber connection is back, with no further batch, and
 * every line once, in order.
 */
describe.skipIf(!hasRedisServer)('run lines across replicas: Redis down and back', () => {
  let port: number;
  let server: ChildProcess | undefined;
  let a: TestHub;
  let b: Hub & { baseUrl: string };
  const startRedis = async () => {
    server = spawn(REDIS_SERVER, ['--port', String(port), '--save', '', '--appendonly', 'no'], {
      stdio: 'ignore',
    });
    const probe = createClient({ url: `redis://127.0.0.1:${port}` });
    probe.on('error', () => undefined);
    await until(
      'own Redis up',
      async () =>
        probe.connect().then(
          () => true,
          () => false,
        ),
      5_000,
    );
    await probe.quit();
  };
  const stopRedis = async () => {
    const s = server!;
    const gone = new Promise((r) => s.once('exit', r));
    s.kill('SIGKILL');
    await gone;
    server = undefined;
  };

  beforeAll(async () => {
    port = await freePort();
    await startRedis();
    [a, b] = await twoReplicas({ REDIS_URL: `redis://127.0.0.1:${port}`, REDIS_STREAM: 'outage' });
  });
  afterAll(async () => {
    if (!server) await startRedis().catch(() => undefined);
    await b?.close();
    await a?.close();
    if (server) await stopRedis();
  });

  it('the storing replica goes on; the other catches up from the database when Redis is back', async () => {
    const owner = await HttpUser.signIn(a.baseUrl, 'outage-owner');
    await owner.createTeam();
    const runId = (await owner.startRun(await owner.upload(await toyStarter()))).id;
    const agent = new TestAgent(a);
    await agent.claim(runId);
    let n = 0;
    const batch = () => agent.log(runId, ...Array.from({ length: 10 }, () => `line ${++n}`));
    const onA = new RunWatcher(a.baseUrl, { cookie: owner.cookie });
    const onB = new RunWatcher(b.baseUrl, { cookie: owner.cookie });
    expect((await onA.join(runId)).ok).toBe(true);
    expect((await onB.join(runId)).ok).toBe(true);
    const remoteB = b.app.get(RemoteRunLines) as RedisRunLines;
    await until('B subscribed', () => remoteB.watching.includes(runId), 5_000);
    for (let i = 0; i < 5; i++) await batch();
    await until('both have the first lines', () => onA.lastSeq >= n && onB.lastSeq >= n, 5_000);

    await stopRedis();
    const before = onB.lastSeq;
    for (let i = 0; i < 5; i++) await batch();
    await until('A still gets every line at once', () => onA.lastSeq >= n, 2_000);
    await new Promise((r) => setTimeout(r, 300));
    expect(onB.lastSeq).toBe(before);

    await startRedis();
    // No new batch: the reconnected subscriber alone brings B up to date.
    await until('B caught up after Redis came back', () => onB.lastSeq >= n, 15_000);
    for (let i = 0; i < 3; i++) await batch();
    await until('live again on B', () => onB.lastSeq >= n, 5_000);
    await new Promise((r) => setTimeout(r, 200));
    onA.assertContiguous();
    onB.assertContiguous();
    expect(onB.lines.length).toBe(n);
    onA.close();
    onB.close();
  });
});
