import {
  AccessRevokedEvent,
  JoinAck,
  RunCheckEvent,
  RunLogEvent,
  RunMetricEvent,
  RunResultLiveEvent,
  RunSampleEvent,
  RunStatusEvent,
} from '../protocol/live';
import {
  TERMINAL_STATUSES,
  type CheckView,
  type LogLine,
  type LogsPage,
  type MetricView,
  type RunResultView,
  type RunView,
  type SampleView,
} from '../rest/runs';

/**
 * What a run follower needs from the outside world: the `/live` socket and two REST reads. The CLI
 * plugs in its Node socket.io client and API client, the web the tab's shared socket and `fetch`.
 */
export interface RunFollowerTransport {
  /** Whether the live connection is up now. */
  readonly connected: boolean;
  /**
   * Listens to a socket event: `connect`, `disconnect` (payload: the reason) or a `/live` server
   * event (payload: raw, the follower parses it). Returns the unsubscribe.
   */
  on(event: string, listener: (payload: unknown) => void): () => void;
  /** Emits `run.join` and resolves with the raw ack; rejects when none came in time. */
  join(body: { runId: string; afterSeq: number }): Promise<unknown>;
  leave(body: { runId: string }): void;
  /** `GET /api/runs/:id/logs?after=&limit=` */
  logs(runId: string, after: number, limit: number): Promise<LogsPage>;
  /** `GET /api/runs/:id` */
  run(runId: string): Promise<RunView>;
}

/** What the follower uses of a socket.io client socket (Node or browser), without depending on it. */
export interface LiveSocketLike {
  readonly connected: boolean;
  on(event: string, listener: (payload: unknown) => void): unknown;
  off(event: string, listener: (payload: unknown) => void): unknown;
  emit(event: string, body: unknown): unknown;
  timeout(ms: number): { emitWithAck(event: string, body: unknown): Promise<unknown> };
}

/** A follower transport over a socket.io client socket and the two REST reads. */
export function socketRunTransport(
  socket: LiveSocketLike,
  rest: Pick<RunFollowerTransport, 'logs' | 'run'>,
  joinTimeoutMs = 10_000,
): RunFollowerTransport {
  return {
    get connected() {
      return socket.connected;
    },
    on(event, listener) {
      socket.on(event, listener);
      return () => void socket.off(event, listener);
    },
    join: (body) => socket.timeout(joinTimeoutMs).emitWithAck('run.join', body),
    leave: (body) => void socket.emit('run.leave', body),
    logs: rest.logs,
    run: rest.run,
  };
}

/** Connection news a follower reports once each, for the caller to word. */
export type FollowerNotice =
  | { kind: 'live_lost'; reason: string }
  | { kind: 'live_restored' }
  | { kind: 'api_unreachable'; error: unknown };

export interface RunFollowerHandlers {
  /** New lines, each seq exactly once and in ascending order across calls. */
  lines?(lines: LogLine[]): void;
  status?(run: RunView): void;
  sample?(sample: SampleView): void;
  check?(check: CheckView): void;
  metric?(metric: MetricView): void;
  result?(result: RunResultView): void;
  /** The live connection went up or down. */
  connection?(up: boolean): void;
  /** The hub accepted `run.join` (the replay after `afterSeq` follows). */
  joined?(ack: JoinAck): void;
  /**
   * `run.join` failed: `answered` when the hub refused it (its `{code, message}`), otherwise no
   * usable answer came (timeout, lost connection, malformed ack). REST carries on either way.
   */
  joinFailed?(error: { code: string; message: string }, answered: boolean): void;
  notice?(notice: FollowerNotice): void;
  /** The hub took this connection's access to the run away; the follower has stopped. */
  revoked?(event: AccessRevokedEvent): void;
  /** The run is finished and every stored line has been delivered; polling stops. */
  ended?(run: RunView): void;
  /** A REST error that is not transient, or the API unreachable past `maxOfflineMs`; the follower has stopped. */
  failed?(error: unknown): void;
}

export interface RunFollowerOptions {
  runId: string;
  /** The run's team when known up front (else learnt from the run): an `access.revoked` for it ends the follow. */
  teamId?: string | null;
  /** Deliver lines after this seq (0 = from the start). */
  afterSeq?: number;
  /** Lines per REST page. */
  pageSize?: number;
  /** REST polling period while not joined to the live room. */
  pollMs?: number;
  /** Poll REST at once on start and on every disconnect, instead of one period later. */
  pollAtOnce?: boolean;
  /** While joined, poll REST anyway every this many periods as a safety net (0: never). */
  safetyNetEvery?: number;
  /** This long after a join, fill the backlog over REST if the replay did not reach the run's last line. */
  backlogCheckMs?: number;
  /** Whether a REST error is worth retrying (default: every error is). */
  transient?: (error: unknown) => boolean;
  /** Give up after this long without reaching the API at all (default: never). */
  maxOfflineMs?: number;
}

export const isTerminalRun = (run: Pick<RunView, 'status'>): boolean =>
  TERMINAL_STATUSES.includes(run.status);

/**
 * Whether an `access.revoked` event ends the live view of a run of `teamId`: the credential is gone
 * (teamId null), the team's rooms were left, or the run is named.
 */
export function revokesRun(e: AccessRevokedEvent, runId: string, teamId: string | null | undefined): boolean {
  return e.teamId === null || e.runIds.includes(runId) || (teamId != null && e.teamId === teamId);
}

const JOIN_UNANSWERED = { code: 'timeout', message: 'The live connection did not answer; retrying.' };
const JOIN_BAD_ACK = { code: 'bad_ack', message: 'The hub sent an unexpected answer.' };

/**
 * Follows one run's log over `/live`, exactly once per line: it keeps the last seq delivered, drops
 * anything at or below it, fills a gap from REST before the line after it, rejoins with `afterSeq`
 * = the last line after every reconnect, and pages the REST log while it is not joined. Status,
 * sample, check, metric and result events are passed on as they arrive. Once the run is finished
 * and REST says the log is complete, `ended` is called with the final run.
 */
export class RunFollower {
  /** The last seq delivered: the cursor for `afterSeq` and REST `after`. */
  get last(): number {
    return this.cursor;
  }
  /** How lines arrived (for tests and diagnostics). */
  readonly stats = { socketLines: 0, restLines: 0, duplicates: 0, joins: 0, gapsFilled: 0 };

  private cursor: number;
  private chain: Promise<void> = Promise.resolve();
  private offs: (() => void)[] = [];
  private joined = false;
  /** Bumped on every connect and disconnect, so a late ack of an older connection is ignored. */
  private epoch = 0;
  /** run.status events taken so far: a join ack is older than any that came after its join was sent. */
  private statusEvents = 0;
  private finishing = false;
  private ended = false;
  private stopped = false;
  /** A gap fill failed: REST is due on the next tick even while joined. */
  private behind = false;
  private offlineSince: number | null = null;
  private lostNoticeShown = false;
  private timer?: ReturnType<typeof setTimeout>;
  private backlogTimer?: ReturnType<typeof setTimeout>;
  private polls = 0;
  private teamId: string | null = null;

  constructor(
    private readonly transport: RunFollowerTransport,
    private readonly o: RunFollowerOptions,
    private readonly h: RunFollowerHandlers = {},
  ) {
    this.cursor = o.afterSeq ?? 0;
    this.teamId = o.teamId ?? null;
  }

  private get pollMs(): number {
    return this.o.pollMs ?? 2000;
  }

  private get runId(): string {
    return this.o.runId;
  }

  start(): void {
    const t = this.transport;
    const mine = (runId: string) => runId === this.runId;
    this.offs.push(
      t.on('connect', () => this.onConnect()),
      t.on('disconnect', (reason) => this.onDisconnect(String(reason))),
      t.on('run.log', (raw) => {
        const p = RunLogEvent.safeParse(raw);
        if (p.success && mine(p.data.runId)) this.enqueue(() => this.acceptLive(p.data.lines));
      }),
      t.on('run.status', (raw) => {
        const p = RunStatusEvent.safeParse(raw);
        if (p.success && mine(p.data.run.id)) {
          this.statusEvents += 1;
          this.onRun(p.data.run);
        }
      }),
      t.on('run.sample', (raw) => {
        const p = RunSampleEvent.safeParse(raw);
        if (p.success && mine(p.data.runId)) this.h.sample?.(p.data.sample);
      }),
      t.on('run.check', (raw) => {
        const p = RunCheckEvent.safeParse(raw);
        if (p.success && mine(p.data.runId)) this.h.check?.(p.data.check);
      }),
      t.on('run.metric', (raw) => {
        const p = RunMetricEvent.safeParse(raw);
        if (p.success && mine(p.data.runId)) this.h.metric?.(p.data.metric);
      }),
      t.on('run.result', (raw) => {
        const p = RunResultLiveEvent.safeParse(raw);
        if (!p.success || !mine(p.data.runId)) return;
        this.h.result?.(p.data.result);
        this.startFinishing(0);
      }),
      t.on('access.revoked', (raw) => {
        const p = AccessRevokedEvent.safeParse(raw);
        if (!p.success || !revokesRun(p.data, this.runId, this.teamId)) return;
        // Access is gone: stop (no rejoin, no polling) instead of retrying forever.
        this.halt(false);
        this.h.revoked?.(p.data);
      }),
    );
    if (t.connected) this.onConnect();
    this.schedule(this.o.pollAtOnce ? 0 : this.pollMs);
  }

  /** Stops following: no more callbacks, timers cleared, the run's room left. */
  stop(): void {
    this.halt(this.transport.connected);
  }

  private halt(leave: boolean): void {
    if (this.stopped) return;
    this.stopped = true;
    clearTimeout(this.timer);
    clearTimeout(this.backlogTimer);
    this.offs.splice(0).forEach((off) => off());
    if (leave) this.transport.leave({ runId: this.runId });
  }

  private enqueue(task: () => Promise<void> | void): void {
    this.chain = this.chain.then(async () => {
      if (this.stopped) return;
      try {
        await task();
      } catch (err) {
        this.fail(err);
      }
    });
  }

  private fail(err: unknown): void {
    if (this.stopped) return;
    this.halt(this.transport.connected);
    this.h.failed?.(err);
  }

  private deliver(lines: LogLine[], via: 'socketLines' | 'restLines'): void {
    if (!lines.length) return;
    this.cursor = lines[lines.length - 1].seq;
    this.stats[via] += lines.length;
    this.h.lines?.(lines);
  }

  private onRun(run: RunView, finishDelay = 0): void {
    this.teamId = run.teamId;
    this.h.status?.(run);
    if (isTerminalRun(run)) this.startFinishing(finishDelay);
  }

  private onConnect(): void {
    this.joined = false;
    const epoch = ++this.epoch;
    this.h.connection?.(true);
    // The cursor is read in order with everything already delivered; the ack is not awaited in the
    // queue, so a hub that never answers cannot hold up the lines (REST carries on meanwhile).
    this.enqueue(() => {
      const statusesBefore = this.statusEvents;
      this.transport.join({ runId: this.runId, afterSeq: this.cursor }).then(
        (raw) => this.enqueue(() => this.onJoinAck(epoch, raw, statusesBefore)),
        () =>
          this.enqueue(() => {
            if (epoch === this.epoch) this.h.joinFailed?.(JOIN_UNANSWERED, false);
          }),
      );
    });
  }

  private onDisconnect(reason: string): void {
    const wasJoined = this.joined;
    this.joined = false;
    this.epoch += 1;
    this.h.connection?.(false);
    if (wasJoined && !this.lostNoticeShown) {
      this.h.notice?.({ kind: 'live_lost', reason });
      this.lostNoticeShown = true;
    }
    this.schedule(this.o.pollAtOnce ? 0 : this.pollMs);
  }

  private onJoinAck(epoch: number, raw: unknown, statusesBefore: number): void {
    if (epoch !== this.epoch || !this.transport.connected) return;
    const parsed = JoinAck.safeParse(raw);
    if (!parsed.success) return this.h.joinFailed?.(JOIN_BAD_ACK, false);
    const ack = parsed.data;
    this.stats.joins += 1;
    if (!ack.ok) {
      const error = ack.error ?? { code: 'join_refused', message: 'the hub refused to join this run' };
      return this.h.joinFailed?.(error, true);
    }
    this.joined = true;
    this.offlineSince = null;
    if (this.lostNoticeShown) {
      this.h.notice?.({ kind: 'live_restored' });
      this.lostNoticeShown = false;
    }
    this.h.joined?.(ack);
    const backlog = this.o.backlogCheckMs;
    // The ack's run was read when the hub joined this socket to the run's room: a run.status that
    // came since the join was sent is as new or newer (the hub sends changes after they are stored,
    // in order), so the ack's older view must not overwrite it.
    if (ack.run && this.statusEvents === statusesBefore) this.onRun(ack.run, backlog ?? 0);
    if (backlog !== undefined) {
      const target = ack.run?.lastLogSeq ?? 0;
      clearTimeout(this.backlogTimer);
      this.backlogTimer = setTimeout(() => {
        // If the replay did not bring us up to the stored tail, fetch the rest over REST.
        if (this.cursor < target) this.enqueue(async () => void (await this.restOrOffline()));
      }, backlog);
    }
  }

  private startFinishing(delay: number): void {
    if (this.finishing) return;
    this.finishing = true;
    this.schedule(delay);
  }

  /** Lines from the socket: drop duplicates, fill a gap from REST first, deliver in order. */
  private async acceptLive(lines: LogLine[]): Promise<void> {
    let held: LogLine[] = [];
    const top = () => (held.length ? held[held.length - 1].seq : this.cursor);
    for (const line of [...lines].sort((a, b) => a.seq - b.seq)) {
      if (line.seq <= top()) {
        this.stats.duplicates += 1;
        continue;
      }
      if (line.seq > top() + 1) {
        this.deliver(held, 'socketLines');
        held = [];
        // While REST is failing, the next tick pages past the gap; the live line waits for it.
        if (this.behind) return;
        this.stats.gapsFilled += 1;
        if (!(await this.restOrOffline(line.seq - 1))) return;
        if (line.seq <= this.cursor) {
          this.stats.duplicates += 1;
          continue;
        }
      }
      held.push(line);
    }
    this.deliver(held, 'socketLines');
  }

  /**
   * Pages the REST log after the cursor (up to `upTo`), riding out transient failures. Returns
   * whether the pages were read; a failure leaves the follower `behind`, so the next tick retries.
   */
  private async restOrOffline(upTo = Number.POSITIVE_INFINITY): Promise<boolean> {
    try {
      await this.page(upTo);
      return true;
    } catch (err) {
      this.offline(err);
      return false;
    }
  }

  /** Pages the REST log after the cursor (up to `upTo`). Returns the last page's `complete`. */
  private async page(upTo = Number.POSITIVE_INFINITY): Promise<boolean> {
    for (;;) {
      const page = await this.transport.logs(this.runId, this.cursor, this.o.pageSize ?? 500);
      const fresh = page.items.filter((l) => l.seq > this.cursor).sort((a, b) => a.seq - b.seq);
      const take: LogLine[] = [];
      for (const line of fresh) {
        if (line.seq > upTo) break;
        if (take.length && line.seq === take[take.length - 1].seq) continue;
        take.push(line);
      }
      this.deliver(take, 'restLines');
      this.behind = false;
      this.offlineSince = null;
      if (page.complete && fresh.every((l) => l.seq <= this.cursor)) return true;
      if (take.length === 0 || this.cursor >= upTo) return false;
    }
  }

  private offline(err: unknown): void {
    if (this.o.transient && !this.o.transient(err)) throw err;
    this.behind = true;
    const now = Date.now();
    this.offlineSince ??= now;
    if (!this.lostNoticeShown) {
      this.h.notice?.({ kind: 'api_unreachable', error: err });
      this.lostNoticeShown = true;
    }
    if (now - this.offlineSince > (this.o.maxOfflineMs ?? Number.POSITIVE_INFINITY)) throw err;
  }

  private schedule(delay: number): void {
    if (this.stopped || this.ended) return;
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.enqueue(() => this.tick()), delay);
  }

  /** REST polling: while not joined, behind or finishing; every `safetyNetEvery` periods otherwise. */
  private async tick(): Promise<void> {
    this.polls += 1;
    const every = this.o.safetyNetEvery ?? 0;
    const due = !this.joined || this.finishing || this.behind || (every > 0 && this.polls % every === 0);
    if (due) {
      try {
        if (await this.page()) {
          const run = await this.transport.run(this.runId);
          this.ended = true;
          this.teamId = run.teamId;
          this.h.ended?.(run);
          return;
        }
      } catch (err) {
        this.offline(err);
      }
    }
    this.schedule(this.pollMs);
  }
}
