import { afterEach, describe, expect, it } from 'vitest';
import {
  RunFollower,
  revokesRun,
  type RunView,
  type AccessRevokedEvent,
  type FollowerNotice,
  type LogLine,
  type LogsPage,
  type RunFollowerHandlers,
  type RunFollowerOptions,
  type RunFollowerTransport,
} from '../src';
import { RUN_ID, runView, TEAM_ID } from './fixtures';

const RUN = RUN_ID;
const TEAM = TEAM_ID;

const line = (seq: number): LogLine => ({ seq, ts: seq, stream: 'out', text: `line ${seq}` });

/**
 * The hub as the follower sees it: a socket that the test connects, drops and feeds, and the REST
 * log over the stored lines. `run.join` acks like the gateway (the replay after `afterSeq` follows
 * the ack) unless `ack` says otherwise.
 */
class FakeHub implements RunFollowerTransport {
  connected = false;
  stored: LogLine[] = [];
  status: RunView['status'] = 'running';
  readonly joins: number[] = [];
  readonly leaves: string[] = [];
  readonly logCalls: { after: number; limit: number }[] = [];
  /** The next REST log reads that fail, with this error. */
  failLogs = 0;
  logError: unknown = new Error('ECONNREFUSED');
  /** The answer to `run.join`: 'ok' (gateway-like), a raw ack, or 'silent' (no answer). */
  ack: 'ok' | 'silent' | unknown = 'ok';
  private readonly listeners = new Map<string, Set<(p: unknown) => void>>();

  get run_(): RunView {
    return runView({ status: this.status, lastLogSeq: this.stored.length });
  }

  on(event: string, listener: (p: unknown) => void): () => void {
    if (!this.listeners.has(event)) this.listeners.set(event, new Set());
    this.listeners.get(event)!.add(listener);
    return () => void this.listeners.get(event)!.delete(listener);
  }

  listenerCount(): number {
    return [...this.listeners.values()].reduce((n, s) => n + s.size, 0);
  }

  emit(event: string, payload?: unknown): void {
    for (const l of [...(this.listeners.get(event) ?? [])]) l(payload);
  }

  join(body: { runId: string; afterSeq: number }): Promise<unknown> {
    this.joins.push(body.afterSeq);
    if (this.ack === 'silent')
      return new Promise((_, reject) => setTimeout(() => reject(new Error('timeout')), 5));
    if (this.ack !== 'ok') return Promise.resolve(this.ack);
    const replay = this.stored.filter((l) => l.seq > body.afterSeq);
    setTimeout(() => {
      if (this.connected && replay.length) this.emit('run.log', { runId: body.runId, lines: replay });
    }, 1);
    return Promise.resolve({ ok: true, run: this.run_ });
  }

  leave(body: { runId: string }): void {
    this.leaves.push(body.runId);
  }

  async logs(runId: string, after: number, limit: number): Promise<LogsPage> {
    this.logCalls.push({ after, limit });
    if (this.failLogs > 0) {
      this.failLogs -= 1;
      throw this.logError;
    }
    const items = this.stored.filter((l) => l.seq > after).slice(0, limit);
    const nextAfter = items.length ? items[items.length - 1].seq : after;
    return { items, nextAfter, complete: this.status !== 'running' && nextAfter >= this.stored.length };
  }

  async run(): Promise<RunView> {
    return this.run_;
  }

  connect(): void {
    this.connected = true;
    this.emit('connect');
  }

  drop(reason = 'transport close'): void {
    this.connected = false;
    this.emit('disconnect', reason);
  }

  /** Stores n lines; broadcasts them (all but `skip`) unless `silent`. */
  append(n: number, opts: { silent?: boolean; skip?: number[] } = {}): LogLine[] {
    const fresh = Array.from({ length: n }, (_, i) => line(this.stored.length + i + 1));
    this.stored.push(...fresh);
    const sent = fresh.filter((l) => !opts.skip?.includes(l.seq));
    if (!opts.silent && sent.length && this.connected) this.send(sent);
    return fresh;
  }

  send(lines: LogLine[], runId = RUN): void {
    this.emit('run.log', { runId, lines });
  }

  finish(): void {
    this.status = 'succeeded';
    if (this.connected) this.emit('run.status', { run: this.run_ });
  }
}

const followers: RunFollower[] = [];
afterEach(() => followers.splice(0).forEach((f) => f.stop()));

function follow(hub: FakeHub, opts: Partial<RunFollowerOptions> = {}, handlers: RunFollowerHandlers = {}) {
  const seen: number[] = [];
  const batches: number[][] = [];
  const notices: FollowerNotice[] = [];
  const statuses: string[] = [];
  let ended: RunView | null = null;
  let failed: unknown = null;
  const f = new RunFollower(
    hub,
    { runId: RUN, pollMs: 20, ...opts },
    {
      lines: (ls) => {
        seen.push(...ls.map((l) => l.seq));
        batches.push(ls.map((l) => l.seq));
      },
      notice: (n) => notices.push(n),
      status: (r) => statuses.push(r.status),
      ended: (r) => (ended = r),
      failed: (e) => (failed = e),
      ...handlers,
    },
  );
  followers.push(f);
  f.start();
  return {
    f,
    seen,
    batches,
    notices,
    statuses,
    ended: () => ended,
    failed: () => failed,
  };
}

const until = async (cond: () => boolean, ms = 3000) => {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error('timed out waiting');
    await new Promise((r) => setTimeout(r, 2));
  }
};
const settle = (ms = 60) => new Promise((r) => setTimeout(r, ms));
const upTo = (n: number) => Array.from({ length: n }, (_, i) => i + 1);

describe('RunFollower', () => {
  it('drops duplicates and sorts a batch that arrives out of order', async () => {
    const hub = new FakeHub();
    hub.connect();
    const t = follow(hub, { pollMs: 60_000 });
    await until(() => hub.joins.length === 1);
    const stored = hub.append(4, { silent: true });
    hub.send([stored[2], stored[0], stored[1]]);
    hub.send([stored[0], stored[1], stored[2], stored[3], stored[3]]);
    await until(() => t.seen.length === 4);
    await settle();
    expect(t.seen).toEqual([1, 2, 3, 4]);
    expect(t.batches).toEqual([[1, 2, 3], [4]]);
    expect(t.f.stats.duplicates).toBe(4);
    expect(t.f.last).toBe(4);
    expect(hub.logCalls).toEqual([]); // no gap: REST never asked
  });

  it('fills a gap once from REST, before the line after it, and only up to that line', async () => {
    const hub = new FakeHub();
    hub.connect();
    const t = follow(hub, { pollMs: 60_000, pageSize: 100 });
    await until(() => hub.joins.length === 1);
    hub.append(3);
    hub.append(5, { skip: [4, 5] }); // 4 and 5 never broadcast
    await until(() => t.seen.length === 8);
    expect(t.seen).toEqual(upTo(8));
    expect(hub.logCalls).toEqual([{ after: 3, limit: 100 }]);
    expect(t.f.stats).toMatchObject({ gapsFilled: 1, restLines: 2, socketLines: 6 });
  });

  it('takes lines that arrive late, across batches, once (the gap fill already brought them)', async () => {
    const hub = new FakeHub();
    hub.connect();
    const t = follow(hub, { pollMs: 60_000 });
    await until(() => hub.joins.length === 1);
    const s = hub.append(5, { silent: true });
    hub.send([s[0]]);
    hub.send([s[4], s[2]]);
    hub.send([s[1], s[3]]);
    await until(() => t.seen.length === 5);
    await settle();
    expect(t.seen).toEqual(upTo(5));
    // Each fill reads up to the line before the one that showed the gap: 2, then 4.
    expect(t.f.stats.gapsFilled).toBe(2);
    expect(hub.logCalls.map((c) => c.after)).toEqual([1, 3]);
    expect(t.f.stats.duplicates).toBe(2); // the late 2 and 4
  });

  it('passes a hole REST does not have after one fill, instead of waiting forever', async () => {
    const hub = new FakeHub();
    hub.connect();
    const t = follow(hub, { pollMs: 60_000 });
    await until(() => hub.joins.length === 1);
    hub.send([line(1), line(2)]);
    hub.send([line(5)]); // 3 and 4 were never stored
    await until(() => t.seen.length === 3);
    expect(t.seen).toEqual([1, 2, 5]);
    expect(hub.logCalls).toHaveLength(1);
  });

  it('rejoins with afterSeq = the last line after each reconnect: no line twice, none lost', async () => {
    const hub = new FakeHub();
    hub.append(5, { silent: true }); // before the follower: comes by the replay
    hub.connect();
    const t = follow(hub, { pollMs: 60_000 });
    await until(() => t.seen.length === 5);
    hub.append(2);
    await until(() => t.seen.length === 7);
    hub.drop();
    hub.append(4, { silent: true }); // while disconnected: nobody hears these
    hub.connect();
    await until(() => t.seen.length === 11);
    hub.drop('io server disconnect');
    hub.append(3, { silent: true });
    hub.connect();
    await until(() => t.seen.length === 14);
    await settle();
    expect(t.seen).toEqual(upTo(14));
    expect(hub.joins).toEqual([0, 7, 11]);
    expect(hub.logCalls).toEqual([]); // the socket did it all
    // Told once that the live connection was lost, and each time that it came back.
    expect(t.notices).toEqual([
      { kind: 'live_lost', reason: 'transport close' },
      { kind: 'live_restored' },
      { kind: 'live_lost', reason: 'io server disconnect' },
      { kind: 'live_restored' },
    ]);
  });

  it('pages REST while the socket is down and rejoins after what REST already delivered', async () => {
    const hub = new FakeHub();
    hub.connect();
    const t = follow(hub, { pollMs: 10, pollAtOnce: true });
    hub.append(3);
    await until(() => t.seen.length === 3);
    hub.drop();
    hub.append(4, { silent: true });
    await until(() => t.seen.length === 7); // by REST, the socket being down
    hub.connect();
    await until(() => hub.joins.length === 2);
    hub.append(1);
    await until(() => t.seen.length === 8);
    await settle();
    expect(t.seen).toEqual(upTo(8));
    expect(hub.joins[1]).toBe(7);
  });

  it('keeps a run.status that came while its join was in flight over the older view in the ack', async () => {
    const hub = new FakeHub();
    hub.status = 'assigned';
    let answer!: (ack: unknown) => void;
    hub.join = (body) => {
      hub.joins.push(body.afterSeq);
      return new Promise((r) => (answer = r));
    };
    hub.connect();
    const f = follow(hub, { pollMs: 60_000 });
    await until(() => hub.joins.length === 1);
    const ackRun = hub.run_; // read by the hub when the socket joined the room
    hub.status = 'running';
    hub.emit('run.status', { run: hub.run_ }); // a change stored after that read
    answer({ ok: true, run: ackRun });
    await settle(20);
    expect(f.statuses).toEqual(['running']);

    // With no event in between, the ack's view is taken (after a reconnect, too).
    hub.join = FakeHub.prototype.join;
    hub.drop();
    hub.status = 'succeeded';
    hub.connect();
    await until(() => f.statuses.length === 2);
    expect(f.statuses).toEqual(['running', 'succeeded']);
  });

  it('ignores the ack of a connection that dropped before it came', async () => {
    const hub = new FakeHub();
    const joined: unknown[] = [];
    let answer!: (ack: unknown) => void;
    hub.join = (body) => {
      hub.joins.push(body.afterSeq);
      return new Promise((r) => (answer = r));
    };
    hub.connect();
    follow(hub, { pollMs: 60_000 }, { joined: (a) => joined.push(a) });
    await until(() => hub.joins.length === 1);
    hub.drop();
    answer({ ok: true, run: hub.run_ });
    await settle(20);
    expect(joined).toEqual([]);
  });

  it('retries REST after a failure, says so once, and delivers every line once', async () => {
    const hub = new FakeHub();
    hub.append(6, { silent: true });
    hub.failLogs = 3;
    const t = follow(hub, { pollMs: 5, pollAtOnce: true });
    await until(() => t.seen.length === 6);
    expect(t.seen).toEqual(upTo(6));
    expect(hub.logCalls.length).toBeGreaterThanOrEqual(4);
    expect(t.notices).toEqual([{ kind: 'api_unreachable', error: hub.logError }]);
    expect(t.failed()).toBeNull();
  });

  it('holds the line after a gap whose fill failed, and fetches both on the next tick', async () => {
    const hub = new FakeHub();
    hub.connect();
    const t = follow(hub, { pollMs: 20, safetyNetEvery: 0 });
    await until(() => hub.joins.length === 1);
    hub.append(2);
    await until(() => t.seen.length === 2);
    hub.failLogs = 1;
    hub.append(3, { skip: [3] }); // 4 and 5 arrive live, 3 must come from REST, which fails once
    await until(() => t.seen.length === 5);
    await settle();
    expect(t.seen).toEqual(upTo(5));
    // The failed fill, then the tick's read past the gap (and its empty last page).
    expect(hub.logCalls.map((c) => c.after)).toEqual([2, 2, 5]);
  });

  it('stops with `failed` on an error that is not transient', async () => {
    const hub = new FakeHub();
    hub.failLogs = 1;
    hub.logError = Object.assign(new Error('forbidden'), { status: 403 });
    const t = follow(hub, {
      pollMs: 5,
      pollAtOnce: true,
      transient: (e) => (e as { status?: number }).status !== 403,
    });
    await until(() => t.failed() !== null);
    expect(t.failed()).toBe(hub.logError);
    await settle(30);
    expect(hub.logCalls).toHaveLength(1);
  });

  it('gives up after maxOfflineMs without reaching the API', async () => {
    const hub = new FakeHub();
    hub.failLogs = Number.POSITIVE_INFINITY;
    const t = follow(hub, { pollMs: 5, pollAtOnce: true, maxOfflineMs: 30 });
    await until(() => t.failed() !== null);
    expect(t.failed()).toBe(hub.logError);
    const calls = hub.logCalls.length;
    await settle(30);
    expect(hub.logCalls).toHaveLength(calls);
  });

  it('ends once the run is finished and REST says the log is complete, then stops polling', async () => {
    const hub = new FakeHub();
    hub.connect();
    const t = follow(hub, { pollMs: 10 });
    await until(() => hub.joins.length === 1);
    hub.append(3);
    await until(() => t.seen.length === 3);
    hub.append(2, { silent: true }); // stored, never broadcast: the end must still bring them
    hub.finish();
    await until(() => t.ended() !== null);
    expect(t.seen).toEqual(upTo(5));
    expect(t.ended()!.status).toBe('succeeded');
    expect(t.statuses).toEqual(['running', 'succeeded']);
    const calls = hub.logCalls.length;
    await settle(50);
    expect(hub.logCalls).toHaveLength(calls);
  });

  it('starts finishing on run.result too, and ends at once for a finished run', async () => {
    const hub = new FakeHub();
    hub.append(4, { silent: true });
    hub.status = 'failed';
    const results: unknown[] = [];
    const t = follow(hub, { pollMs: 60_000, afterSeq: 2 }, { result: (r) => results.push(r) });
    hub.connect();
    await until(() => hub.joins.length === 1);
    hub.emit('run.result', { runId: RUN, result: { nope: true } }); // malformed: ignored
    expect(results).toEqual([]);
    await until(() => t.ended() !== null);
    expect(t.seen).toEqual([3, 4]);
  });

  it('reports a refused join with the hub answer, a silent one as unanswered; REST carries on', async () => {
    const hub = new FakeHub();
    hub.append(2, { silent: true });
    hub.ack = {
      ok: false,
      error: { code: 'run_not_found', message: 'No run in your team; runs are visible to their team only.' },
    };
    const failures: [string, boolean][] = [];
    hub.connect();
    const t = follow(hub, { pollMs: 10 }, { joinFailed: (e, answered) => failures.push([e.code, answered]) });
    await until(() => failures.length === 1 && t.seen.length === 2);
    expect(failures).toEqual([['run_not_found', true]]);
    hub.ack = 'silent';
    hub.drop();
    hub.connect();
    await until(() => failures.length === 2);
    expect(failures[1]).toEqual(['timeout', false]);
    hub.ack = { bogus: 1 };
    hub.drop();
    hub.connect();
    await until(() => failures.length === 3);
    expect(failures[2]).toEqual(['bad_ack', false]);
  });

  it('stops for good when the hub revokes access to the run: no lines, no REST, no rejoin', async () => {
    const hub = new FakeHub();
    hub.connect();
    const revoked: AccessRevokedEvent[] = [];
    const t = follow(hub, { pollMs: 10, safetyNetEvery: 1 }, { revoked: (e) => revoked.push(e) });
    hub.append(3);
    await until(() => t.seen.length === 3);
    const event = (over: Partial<AccessRevokedEvent>): AccessRevokedEvent => ({
      reason: 'member_removed',
      message: 'You were removed from this team.',
      teamId: 'another-team',
      rooms: [],
      runIds: [],
      ...over,
    });
    hub.emit('access.revoked', event({})); // another team's rooms: not this run
    expect(revoked).toEqual([]);
    hub.emit('access.revoked', event({ teamId: TEAM, rooms: [`run:${RUN}`] }));
    expect(revoked).toHaveLength(1);
    const calls = hub.logCalls.length;
    hub.append(2);
    hub.drop();
    hub.connect();
    await settle(50);
    expect(t.seen).toEqual([1, 2, 3]);
    expect(hub.joins).toHaveLength(1);
    expect(hub.logCalls).toHaveLength(calls);
    expect(hub.listenerCount()).toBe(0);
    expect(hub.leaves).toEqual([]); // the hub already took it out of the room
  });

  it('tells whether an access.revoked event ends the live view of a run', () => {
    const e = (p: Partial<AccessRevokedEvent>): AccessRevokedEvent => ({
      reason: 'member_removed',
      message: 'removed',
      teamId: 'team-a',
      rooms: [],
      runIds: [],
      ...p,
    });
    expect(revokesRun(e({ teamId: null, reason: 'logged_out' }), 'run-1', 'team-a')).toBe(true);
    expect(revokesRun(e({ runIds: ['run-1'] }), 'run-1', 'team-b')).toBe(true);
    expect(revokesRun(e({}), 'run-1', 'team-a')).toBe(true);
    expect(revokesRun(e({}), 'run-1', 'team-b')).toBe(false);
  });

  it('fills the backlog from REST when the replay did not reach the run’s last line', async () => {
    const hub = new FakeHub();
    hub.append(6, { silent: true });
    hub.join = async (body) => {
      hub.joins.push(body.afterSeq);
      return { ok: true, run: hub.run_ }; // and no replay at all
    };
    hub.connect();
    const t = follow(hub, { pollMs: 60_000, backlogCheckMs: 20 });
    await settle(10);
    expect(t.seen).toEqual([]);
    await until(() => t.seen.length === 6);
    expect(t.seen).toEqual(upTo(6));
  });

  it('passes on the run’s events, ignores other runs, and leaves the room on stop', async () => {
    const hub = new FakeHub();
    hub.connect();
    const got: string[] = [];
    const t = follow(
      hub,
      { pollMs: 60_000 },
      {
        sample: (s) => got.push(`sample ${s.index}`),
        check: (c) => got.push(`check ${c.name}`),
        metric: (m) => got.push(`metric ${m.name}`),
        result: () => got.push('result'),
      },
    );
    await until(() => hub.joins.length === 1);
    const sample = {
      workload: 'short',
      index: 1,
      warmup: false,
      ttftMs: 1,
      tpotMs: 1,
      tps: 1,
      totalMs: 1,
      tokens: 1,
    };
    hub.emit('run.sample', { runId: 'other', sample });
    hub.send([line(1)], 'other');
    hub.emit('run.status', { run: runView({ id: '55555555-5555-4555-8555-555555555555' }) });
    hub.emit('run.check', { runId: RUN, check: { name: 'correctness', passed: true, detail: 'ok' } });
    hub.emit('run.metric', { runId: RUN, metric: { name: 'loss', step: 1, value: 0.5, elapsedMs: 10 } });
    hub.emit('run.sample', { runId: RUN, sample });
    await settle(10);
    expect(t.seen).toEqual([]);
    expect(t.statuses).toEqual(['running']); // the ack's run only
    expect(got).toEqual(['check correctness', 'metric loss', 'sample 1']);
    t.f.stop();
    expect(hub.leaves).toEqual([RUN]);
    expect(hub.listenerCount()).toBe(0);
  });
});
