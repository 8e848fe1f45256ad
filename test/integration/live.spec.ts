import { io, Socket } from 'socket.io-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunView } from '@dryft/libs';
import { EventBus } from '../../apps/api/src/common/event-bus';
import { RunsRepository } from '../../apps/api/src/runs/runs.repository';
import { HttpUser, RunWatcher, toyStarter, until } from '../support/agent-helpers';
import { startTestHub, TestHub } from '../support/hub';
import { TestAgent } from '../support/test-agent';

const connect = (url: string, opts: { cookie?: string; token?: string } = {}): Socket =>
  io(`${url}/live`, {
    transports: ['websocket'],
    forceNew: true,
    extraHeaders: opts.cookie ? { cookie: opts.cookie } : undefined,
    auth: opts.token ? { token: opts.token } : {},
    reconnection: false,
  });
const connected = (s: Socket) =>
  new Promise<void>((resolve, reject) => {
    s.once('connect', () => resolve());
    s.once('connect_error', reject);
  });

describe('/live: rooms, replay and coalescing', () => {
  let hub: TestHub;
  let owner: HttpUser;
  let stranger: HttpUser;
  let org: HttpUser;
  let runId: string;
  let agent: TestAgent;

  beforeAll(async () => {
    hub = await startTestHub({ env: { ADMIN_LOGINS: 'live-org' } });
    owner = await HttpUser.signIn(hub.baseUrl, 'live-owner');
    await owner.createTeam();
    stranger = await HttpUser.signIn(hub.baseUrl, 'live-stranger');
    await stranger.createTeam();
    org = await HttpUser.signIn(hub.baseUrl, 'live-org');
    const run = await owner.startRun(await owner.upload(await toyStarter()));
    runId = run.id;
    agent = new TestAgent(hub);
    await agent.claim(runId);
  });
  afterAll(async () => hub?.close());

  it('refuses a run to another team, to spectators and to a bad token; spectators may watch leaderboards', async () => {
    const other = connect(hub.baseUrl, { cookie: stranger.cookie });
    await connected(other);
    const refused = await other.emitWithAck('run.join', { runId, afterSeq: 0 });
    expect(refused.ok).toBe(false);
    expect(refused.error.code).toBe('run_not_found');
    const team = await other.emitWithAck('team.join', {
      teamId: (await owner.get('/api/me')).body.activeTeamId,
    });
    expect(team.ok).toBe(false);
    other.close();

    const spectator = connect(hub.baseUrl);
    await connected(spectator);
    expect((await spectator.emitWithAck('run.join', { runId, afterSeq: 0 })).error.code).toBe(
      'sign_in_required',
    );
    const board = await spectator.emitWithAck('leaderboard.join', { benchmarkId: 'toy-decode' });
    expect(board.ok).toBe(true);
    expect(board.leaderboard.benchmarkId).toBe('toy-decode');
    expect((await spectator.emitWithAck('agents.join', {})).ok).toBe(false);
    // Malformed and unknown events are answered, never crash the gateway.
    expect((await spectator.emitWithAck('run.join', { runId: 5 })).error.code).toBe('invalid_request');
    expect((await spectator.emitWithAck('no.such.event', {})).error.code).toBe('unknown_event');
    expect((await spectator.emitWithAck('leaderboard.join', { benchmarkId: 'toy-decode' })).ok).toBe(true);
    spectator.close();

    const bad = connect(hub.baseUrl, { token: 'dryft_pat_nope' });
    const err = await connected(bad).catch((e: Error & { data?: { code: string } }) => e);
    expect((err as { data?: { code: string } }).data?.code).toBe('token_malformed');
    bad.close();
  });

  it('replays stored lines after afterSeq, then live ones, with no gap and no duplicate, across a reconnect', async () => {
    for (let i = 0; i < 5; i++)
      await agent.log(runId, ...Array.from({ length: 10 }, (_, k) => `early ${i * 10 + k}`));
    // A watcher that saw 20 lines before (afterSeq) gets 21.. only.
    const late = connect(hub.baseUrl, { cookie: owner.cookie });
    await connected(late);
    const got: number[] = [];
    late.on('run.log', (e: { lines: { seq: number }[] }) => got.push(...e.lines.map((l) => l.seq)));
    expect((await late.emitWithAck('run.join', { runId, afterSeq: 20 })).ok).toBe(true);
    await until('replay', () => got.length >= 30);
    expect(got).toEqual(Array.from({ length: 30 }, (_, i) => 21 + i));

    // Lines keep coming while a second watcher joins from the start and a third drops and rejoins.
    const fresh = new RunWatcher(hub.baseUrl, { cookie: owner.cookie });
    const flaky = new RunWatcher(hub.baseUrl, { cookie: owner.cookie });
    await flaky.join(runId);
    const writer = (async () => {
      for (let i = 0; i < 40; i++) {
        await agent.log(runId, ...Array.from({ length: 25 }, (_, k) => `live ${i} ${k}`));
        if (i === 10) void fresh.join(runId);
        if (i === 20) flaky.socket.io.engine.close();
      }
    })();
    await writer;
    const total = 50 + 40 * 25;
    await until(
      'everyone caught up',
      () => fresh.lastSeq >= total && flaky.lastSeq >= total && got.length >= total - 20,
      15_000,
    );
    fresh.assertContiguous();
    flaky.assertContiguous();
    expect(flaky.reconnects).toBeGreaterThan(0);
    expect(got).toEqual(Array.from({ length: total - 20 }, (_, i) => 21 + i));
    late.close();
    fresh.close();
    flaky.close();
  });

  it('a change stored while a watcher joins reaches it: the ack is read once the socket is in the run room', async () => {
    // The organizer lowers the whole-run limit right after the join's access check read the run,
    // before the socket is in the run's room: its run.status cannot reach the socket, so the ack
    // must carry it (before, the ack had the limit read before the change, and nothing came after).
    const repo = hub.app.get(RunsRepository);
    const findById = repo.findById;
    let armed = false;
    repo.findById = async (id: string) => {
      const found = await findById.call(repo, id);
      if (armed && id === runId) {
        armed = false;
        const res = await org.req('PATCH', '/api/admin/benchmarks/toy-decode', { runTimeLimitSeconds: 120 });
        expect(res.status).toBe(200);
      }
      return found;
    };
    const watcher = connect(hub.baseUrl, { cookie: owner.cookie });
    try {
      await connected(watcher);
      const events: RunView[] = [];
      watcher.on('run.status', (e: { run: RunView }) => events.push(e.run));
      armed = true;
      const ack = await watcher.emitWithAck('run.join', { runId, afterSeq: 0 });
      expect(ack.ok).toBe(true);
      await new Promise((r) => setTimeout(r, 200));
      const limitOf = (r: RunView) => (Date.parse(r.deadlineAt!) - Date.parse(r.assignedAt!)) / 1000;
      expect(limitOf(events.at(-1) ?? ack.run)).toBe(120);
      expect(limitOf(ack.run)).toBe(120);
    } finally {
      repo.findById = findById;
      watcher.close();
      await org.req('PATCH', '/api/admin/benchmarks/toy-decode', { runTimeLimitSeconds: 300 });
    }
  });

  it('coalesces a burst of leaderboard changes into one broadcast (and one trailing one), and serves organizers the agents', async () => {
    const spectator = connect(hub.baseUrl);
    await connected(spectator);
    let updates = 0;
    // A broadcast is the whole board or, where smaller, the places that changed.
    spectator.on('leaderboard.update', () => updates++);
    spectator.on('leaderboard.diff', () => updates++);
    await spectator.emitWithAck('leaderboard.join', { benchmarkId: 'toy-decode' });
    const bus = hub.app.get(EventBus);
    for (let i = 0; i < 50; i++) bus.emit('leaderboard.changed', { benchmarkId: 'toy-decode' });
    await new Promise((r) => setTimeout(r, 600));
    expect(updates).toBe(1);
    // A change after that broadcast left (within its window or not) costs exactly one more: the
    // trailing broadcast, never lost, never doubled.
    bus.emit('leaderboard.changed', { benchmarkId: 'toy-decode' });
    for (let i = 0; i < 1000 && updates < 2; i++) await new Promise((r) => setTimeout(r, 5));
    expect(updates).toBe(2);
    for (let i = 0; i < 20; i++) bus.emit('leaderboard.changed', { benchmarkId: 'toy-decode' });
    await new Promise((r) => setTimeout(r, 600));
    expect(updates).toBe(3);
    spectator.close();

    const admin = connect(hub.baseUrl, { cookie: org.cookie });
    await connected(admin);
    const update = new Promise<{ agents: unknown[] }>((resolve) => admin.once('agents.update', resolve));
    expect((await admin.emitWithAck('agents.join', {})).ok).toBe(true);
    await org.createAgent('watched-box');
    expect((await update).agents).toBeInstanceOf(Array);
    admin.close();
  });
});
