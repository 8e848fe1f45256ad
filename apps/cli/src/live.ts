import { io, type Socket } from 'socket.io-client';
import {
  isTerminalRun,
  LogsPage,
  RunFollower,
  RunView,
  type LogLine,
  type MetricView,
  type SampleView,
  socketRunTransport,
} from '@dryft/libs';
import { ApiClient, ApiError, NetworkError, sleep } from './http';
import { CliError, EXIT } from './errors';

export const isTerminal = isTerminalRun;

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
  /** Each `run.sample` event of the run, as it arrives over `/live` (none over REST). */
  onSample?: (sample: SampleView) => void;
  /** Each `run.metric` event (a training run's loss curve point), as it arrives over `/live` (none over REST). */
  onMetric?: (metric: MetricView) => void;
  onNotice?: (message: string) => void;
  /** REST polling period while the live connection is down (and a slow safety net while it is up). */
  pollMs?: number;
  /** Give up (exit 4) after this long without reaching the API at all. */
  maxOfflineMs?: number;
  socketFactory?: SocketFactory;
}

/**
 * `dryft logs --follow`: the shared exactly-once `RunFollower` (libs) over a Node socket, printing
 * each line once, in order. While the socket is down (or the hub has no `/live`), the follower
 * pages the REST log instead. Resolves with the finished run once every line has been printed.
 */
export class LogFollower {
  private socket?: Socket;
  private follower?: RunFollower;
  private settled = false;

  constructor(private readonly o: FollowOptions) {}

  private get pollMs(): number {
    return this.o.pollMs ?? 2000;
  }

  /** The last seq printed. */
  get last(): number {
    return this.follower?.last ?? this.o.afterSeq ?? 0;
  }

  /** How many lines arrived over the socket and over REST (for tests and diagnostics). */
  get stats(): RunFollower['stats'] {
    return this.follower!.stats;
  }

  run(): Promise<RunView> {
    const socket = (this.o.socketFactory ?? defaultSocketFactory)(this.o.api.baseUrl, {
      token: this.o.token,
    });
    this.socket = socket;
    // socket.io does not reconnect after a server kick nor after a refused handshake: we do.
    socket.on('disconnect', (reason) => {
      if (reason === 'io server disconnect') setTimeout(() => !this.settled && socket.connect(), 500).unref();
    });
    socket.on(
      'connect_error',
      (err: Error & { data?: { code?: string; details?: { retryAfterSeconds?: number } } }) => {
        // Refused at the handshake (socket.active false): try again later; a rate-limited handshake
        // after the Retry-After it was given. Meanwhile the follower reads the run over REST.
        const wait =
          err.data?.code === 'rate_limited' ? (err.data.details?.retryAfterSeconds ?? 0) * 1000 : 0;
        if (!socket.active)
          setTimeout(() => !this.settled && socket.connect(), Math.max(this.pollMs, 2000, wait)).unref();
      },
    );
    const runId = this.o.runId;
    const done = new Promise<RunView>((resolve, reject) => {
      this.follower = new RunFollower(
        socketRunTransport(socket, {
          logs: (id, after, limit) =>
            this.o.api.call(LogsPage, `/api/runs/${encodeURIComponent(id)}/logs`, {
              query: { after, limit },
              timeoutMs: 15_000,
            }),
          run: (id) => this.o.api.call(RunView, `/api/runs/${encodeURIComponent(id)}`),
        }),
        {
          runId,
          afterSeq: this.o.afterSeq,
          pageSize: 500,
          pollMs: this.pollMs,
          pollAtOnce: true,
          safetyNetEvery: 5,
          transient: (err) => err instanceof NetworkError || (err instanceof ApiError && err.status >= 500),
          maxOfflineMs: this.o.maxOfflineMs ?? 15 * 60_000,
        },
        {
          lines: (lines) => {
            for (const line of lines) this.o.onLine(line);
          },
          status: (r) => this.o.onStatus?.(r),
          sample: (s) => this.o.onSample?.(s),
          metric: (m) => this.o.onMetric?.(m),
          notice: (n) => {
            const say = this.o.onNotice;
            if (n.kind === 'live_lost')
              say?.(
                `Live connection lost (${n.reason}); reconnecting, and reading the log over REST meanwhile.`,
              );
            else if (n.kind === 'live_restored') say?.('Live connection restored.');
            else say?.('Cannot reach the API; retrying until it answers again.');
          },
          joinFailed: ({ code, message }, answered) => {
            if (!answered) return; // no ack (dropped again, or a hub without /live): REST carries on.
            if (/auth|token|sign_in|forbidden|denied|permission/i.test(code))
              return reject(new CliError(EXIT.auth, `Cannot follow run ${runId}: ${message}`, code));
            if (/not_found|unknown/i.test(code))
              return reject(
                new CliError(
                  EXIT.badInput,
                  `Run ${runId} was not found: ${message}. Copy the full Run ID from the run page.`,
                  code,
                ),
              );
            this.o.onNotice?.(`Live log refused (${code}: ${message}); following over REST instead.`);
          },
          // The hub took this token's access away: say why and stop, instead of retrying forever.
          revoked: (e) =>
            reject(
              new CliError(
                EXIT.auth,
                `Stopped following run ${runId}: ${e.message} (${e.reason}, after line ${this.last}).`,
                e.reason,
              ),
            ),
          ended: resolve,
          failed: reject,
        },
      );
    });
    this.follower!.start();
    return done.finally(() => this.stop());
  }

  stop(): void {
    this.settled = true;
    this.follower?.stop();
    if (this.socket) {
      this.socket.removeAllListeners();
      this.socket.disconnect();
    }
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
