import { io, type Socket } from 'socket.io-client';
import {
  AccessRevokedEvent,
  JoinAck,
  LogLine,
  LogsPage,
  RunLogEvent,
  RunStatusEvent,
  RunView,
  TERMINAL_STATUSES,
} from '@dryft/libs';
import { ApiClient, ApiError, NetworkError, sleep } from './http';
import { CliError, EXIT } from './errors';

export const isTerminal = (run: Pick<RunView, 'status'>) => TERMINAL_STATUSES.includes(run.status);

export type SocketFactory = (url: string, opts: { token: string }) => Socket;

export const defaultSocketFactory: SocketFactory = (url, { token }) =>
  io(`${url}/live`, {
    auth: { token },
    transports: ['websocket'],
    reconnection: true,
    reconnectionDelay: 300,
    reconnectionDelayMax: 3000,
    timeout: 10_000,
  });

export interface FollowOptions {
  api: ApiClient;
  token: string;
  runId: string;
  /** Print lines after this seq (0 = from the start). */
  afterSeq?: number;
  onLine: (line: LogLine) => void;
  onStatus?: (run: RunView) => void;
  onNotice?: (message: string) => void;
  /** REST polling period while the live connection is down (and a slow safety net while it is up). */
  pollMs?: number;
  /** Give up (exit 4) after this long without reaching the API at all. */
  maxOfflineMs?: number;
  socketFactory?: SocketFactory;
}

/**
 * Follows a run's log live over `/live`, exactly once per line: it keeps the last seq it printed,
 * drops anything at or below it, fills any gap from REST, and rejoins with `afterSeq` after every
 * reconnect. While the socket is down (or the hub has no `/live`), it pages the REST log instead.
 * Resolves with the finished run once every line has been printed.
 */
export class LogFollower {
  last: number;
  private chain: Promise<void> = Promise.resolve();
  private socket?: Socket;
  private joined = false;
  private finishing = false;
  private settled = false;
  private offlineSince: number | null = null;
  private lostNoticeShown = false;
  private timer?: NodeJS.Timeout;
  private polls = 0;
  private resolveRun!: (run: RunView) => void;
  private rejectRun!: (err: unknown) => void;
  /** How many lines arrived over the socket and over REST (for tests and diagnostics). */
  readonly stats = { socketLines: 0, restLines: 0, duplicates: 0, joins: 0, gapsFilled: 0 };

  constructor(private readonly o: FollowOptions) {
    this.last = o.afterSeq ?? 0;
  }

  private get pollMs(): number {
    return this.o.pollMs ?? 2000;
  }

  run(): Promise<RunView> {
    const done = new Promise<RunView>((resolve, reject) => {
      this.resolveRun = resolve;
      this.rejectRun = reject;
    });
    this.connect();
    this.schedule(0);
    return done.finally(() => this.stop());
  }

  stop(): void {
    this.settled = true;
    if (this.timer) clearTimeout(this.timer);
    if (this.socket) {
      this.socket.removeAllListeners();
      this.socket.disconnect();
    }
  }

  private enqueue(task: () => Promise<void>): void {
    this.chain = this.chain.then(async () => {
      if (this.settled) return;
      try {
        await task();
      } catch (err) {
        this.fail(err);
      }
    });
  }

  private fail(err: unknown): void {
    if (this.settled) return;
    this.rejectRun(err);
  }

  private emit(line: LogLine): void {
    this.last = line.seq;
    this.o.onLine(line);
  }

  private connect(): void {
    const socket = (this.o.socketFactory ?? defaultSocketFactory)(this.o.api.baseUrl, {
      token: this.o.token,
    });
    this.socket = socket;
    socket.on('connect', () => {
      this.joined = false;
      // The cursor is read in order with everything already printed; the ack is not awaited in the
      // queue, so a hub that never answers cannot hold up the lines (REST carries on meanwhile).
      this.enqueue(async () => {
        const afterSeq = this.last;
        socket
          .timeout(10_000)
          .emitWithAck('run.join', { runId: this.o.runId, afterSeq })
          .then(
            (raw: unknown) => this.enqueue(async () => this.onJoinAck(socket, raw)),
            () => undefined, // no ack (dropped again, or a hub without /live): REST polling carries on.
          );
      });
    });
    socket.on('run.log', (payload: unknown) => {
      const parsed = RunLogEvent.safeParse(payload);
      if (!parsed.success || parsed.data.runId !== this.o.runId) return;
      this.enqueue(() => this.acceptLive(parsed.data.lines));
    });
    socket.on('run.status', (payload: unknown) => {
      const parsed = RunStatusEvent.safeParse(payload);
      if (!parsed.success || parsed.data.run.id !== this.o.runId) return;
      this.o.onStatus?.(parsed.data.run);
      if (isTerminal(parsed.data.run)) this.startFinishing();
    });
    socket.on('run.result', (payload: unknown) => {
      if ((payload as { runId?: string })?.runId === this.o.runId) this.startFinishing();
    });
    socket.on('access.revoked', (payload: unknown) => {
      const parsed = AccessRevokedEvent.safeParse(payload);
      if (!parsed.success) return;
      const e = parsed.data;
      if (e.teamId !== null && !e.runIds.includes(this.o.runId)) return;
      // The hub took this token's access away: say why and stop, instead of retrying forever.
      this.fail(
        new CliError(
          EXIT.auth,
          `Stopped following run ${this.o.runId}: ${e.message} (${e.reason}, after line ${this.last}).`,
          e.reason,
        ),
      );
    });
    socket.on('disconnect', (reason) => {
      const wasJoined = this.joined;
      this.joined = false;
      if (this.settled) return;
      if (wasJoined && !this.lostNoticeShown) {
        this.o.onNotice?.(
          `Live connection lost (${reason}); reconnecting, and reading the log over REST meanwhile.`,
        );
        this.lostNoticeShown = true;
      }
      if (reason === 'io server disconnect') setTimeout(() => !this.settled && socket.connect(), 500).unref();
      this.schedule(0);
    });
    socket.on('connect_error', () => {
      this.joined = false;
      // A refused handshake is not retried by socket.io itself; try again later, REST meanwhile.
      if (!socket.active)
        setTimeout(() => !this.settled && socket.connect(), Math.max(this.pollMs, 2000)).unref();
    });
  }

  private onJoinAck(socket: Socket, raw: unknown): void {
    if (!socket.connected) return;
    const parsed = JoinAck.safeParse(raw);
    if (!parsed.success) return;
    const ack = parsed.data;
    this.stats.joins += 1;
    if (!ack.ok) {
      const code = ack.error?.code ?? 'join_refused';
      const message = ack.error?.message ?? 'the hub refused to join this run';
      if (/auth|token|sign_in|forbidden|denied|permission/i.test(code))
        throw new CliError(EXIT.auth, `Cannot follow run ${this.o.runId}: ${message}`, code);
      if (/not_found|unknown/i.test(code))
        throw new CliError(
          EXIT.badInput,
          `Run ${this.o.runId} was not found: ${message}. Copy the full Run ID from the run page.`,
          code,
        );
      this.o.onNotice?.(`Live log refused (${code}: ${message}); following over REST instead.`);
      return;
    }
    this.joined = true;
    this.offlineSince = null;
    if (this.lostNoticeShown) {
      this.o.onNotice?.('Live connection restored.');
      this.lostNoticeShown = false;
    }
    if (ack.run) {
      this.o.onStatus?.(ack.run);
      if (isTerminal(ack.run)) this.startFinishing();
    }
  }

  private startFinishing(): void {
    if (this.finishing) return;
    this.finishing = true;
    this.schedule(0);
  }

  /** Lines from the socket: drop duplicates, fill gaps from REST, print in order. */
  private async acceptLive(lines: LogLine[]): Promise<void> {
    for (const line of [...lines].sort((a, b) => a.seq - b.seq)) {
      if (line.seq <= this.last) {
        this.stats.duplicates += 1;
        continue;
      }
      if (line.seq > this.last + 1) {
        this.stats.gapsFilled += 1;
        await this.page(line.seq - 1);
        if (line.seq <= this.last) continue;
      }
      this.stats.socketLines += 1;
      this.emit(line);
    }
  }

  /** Pages the REST log after `last` (up to `upTo` when given). Returns the last page's `complete`. */
  private async page(upTo = Number.POSITIVE_INFINITY): Promise<boolean> {
    for (;;) {
      const page = await this.o.api.call(LogsPage, `/api/runs/${encodeURIComponent(this.o.runId)}/logs`, {
        query: { after: this.last, limit: 500 },
        timeoutMs: 15_000,
      });
      const fresh = page.items.filter((l) => l.seq > this.last).sort((a, b) => a.seq - b.seq);
      for (const line of fresh) {
        if (line.seq > upTo) break;
        this.stats.restLines += 1;
        this.emit(line);
      }
      if (page.complete && fresh.every((l) => l.seq <= this.last)) return true;
      if (fresh.length === 0 || this.last >= upTo) return false;
    }
  }

  private schedule(delay: number): void {
    if (this.settled) return;
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => this.enqueue(() => this.tick()), delay);
  }

  /** REST polling: always while not joined or finishing; every fifth period as a safety net otherwise. */
  private async tick(): Promise<void> {
    this.polls += 1;
    const due = !this.joined || this.finishing || this.polls % 5 === 0;
    if (due) {
      try {
        const complete = await this.page();
        this.offlineSince = null;
        if (complete) {
          const run = await this.o.api.call(RunView, `/api/runs/${encodeURIComponent(this.o.runId)}`);
          this.resolveRun(run);
          return;
        }
      } catch (err) {
        if (!(err instanceof NetworkError) && !(err instanceof ApiError && err.status >= 500)) throw err;
        const now = Date.now();
        this.offlineSince ??= now;
        if (!this.lostNoticeShown) {
          this.o.onNotice?.('Cannot reach the API; retrying until it answers again.');
          this.lostNoticeShown = true;
        }
        if (now - this.offlineSince > (this.o.maxOfflineMs ?? 15 * 60_000)) throw err;
      }
    }
    this.schedule(this.pollMs);
  }
}

export interface WaitOptions {
  api: ApiClient;
  runId: string;
  timeoutMs: number;
  pollMs?: number;
  onUpdate?: (run: RunView, elapsedMs: number) => void;
  onNotice?: (message: string) => void;
}

/** Polls the run until it finishes or the time is up; network trouble is ridden out until then. */
export async function waitForRun(o: WaitOptions): Promise<{ run: RunView; timedOut: boolean }> {
  const started = Date.now();
  let last: RunView | undefined;
  let warned = false;
  for (;;) {
    try {
      last = await o.api.call(RunView, `/api/runs/${encodeURIComponent(o.runId)}`, { timeoutMs: 15_000 });
      if (warned) {
        o.onNotice?.('The API answers again.');
        warned = false;
      }
      o.onUpdate?.(last, Date.now() - started);
      if (isTerminal(last)) return { run: last, timedOut: false };
    } catch (err) {
      if (!(err instanceof NetworkError) && !(err instanceof ApiError && err.status >= 500)) throw err;
      if (!warned) {
        o.onNotice?.(`Cannot reach the API (${err.message.split('\n')[0]}); still waiting.`);
        warned = true;
      }
    }
    const left = o.timeoutMs - (Date.now() - started);
    if (left <= 0) {
      if (!last)
        throw new CliError(
          EXIT.network,
          `Could not read run ${o.runId} before the wait ran out; check the connection with \`dryft doctor\`.`,
        );
      return { run: last, timedOut: true };
    }
    await sleep(Math.min(o.pollMs ?? 2000, left));
  }
}
