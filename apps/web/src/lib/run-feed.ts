import {
  RunFollower,
  isTerminalRun,
  type PublicBenchmark,
  type RankView,
  type RunFollowerTransport,
  type RunResultView,
  type RunView,
} from '@dryft/libs';
import { writable, type Readable } from 'svelte/store';
import { api, errorMessage } from './api';
import { loadBenchmarks } from './benchmarks';
import { runFollowerTransport } from './live';
import { LogBuffer } from './logbuffer';
import { RunState } from './runstate';

/** What the run page shows besides `rs` and `buffer`; `version` and `logVersion` bump on their changes. */
export interface RunFeedView {
  version: number;
  logVersion: number;
  loadError: unknown;
  liveError: string | null;
  /** Why the hub stopped this page's live view (token revoked, removed from the team, signed out). */
  revoked: string | null;
  connected: boolean;
  benchmark: PublicBenchmark | null;
  rank: RankView | null;
  rankError: string | null;
}

export interface RunFeedDeps {
  api: <T>(path: string) => Promise<T>;
  transport: () => RunFollowerTransport;
  benchmarks: () => Promise<PublicBenchmark[]>;
  errorMessage: (err: unknown) => string;
  /** Coalesces log redraws: a burst of log batches costs one render per frame. */
  frame: (cb: () => void) => () => void;
  /** Period of the REST fallback (log and run) while the live connection is down. */
  pollMs: number;
}

const browserDeps = (): RunFeedDeps => ({
  api: (path) => api(path),
  transport: runFollowerTransport,
  benchmarks: () => loadBenchmarks(),
  errorMessage,
  frame: (cb) => {
    const id = requestAnimationFrame(cb);
    return () => cancelAnimationFrame(id);
  },
  pollMs: 5000,
});

/**
 * The run page's data: the run, its samples, checks, metrics, result and rank (`rs`), and its log
 * (`buffer`), fed by the shared exactly-once `RunFollower` over the tab's `/live` socket with REST
 * fallback. `view` is a Svelte store of the rest of the page state.
 */
export class RunFeed {
  readonly buffer = new LogBuffer();
  readonly rs = new RunState();
  private readonly store = writable<RunFeedView>({
    version: 0,
    logVersion: 0,
    loadError: null,
    liveError: null,
    revoked: null,
    connected: true,
    benchmark: null,
    rank: null,
    rankError: null,
  });
  readonly view: Readable<RunFeedView> = { subscribe: this.store.subscribe };
  private readonly deps: RunFeedDeps;
  private follower?: RunFollower;
  private poll?: ReturnType<typeof setInterval>;
  private cancelFrame?: () => void;
  private framePending = false;
  private stopped = false;
  private connected = true;
  private revoked = false;

  constructor(
    readonly runId: string,
    deps: Partial<RunFeedDeps> = {},
  ) {
    this.deps = { ...browserDeps(), ...deps };
  }

  private set(patch: Partial<RunFeedView>): void {
    this.store.update((s) => ({ ...s, ...patch }));
  }

  private bump(): void {
    this.store.update((s) => ({ ...s, version: s.version + 1 }));
  }

  private bumpLog(): void {
    if (this.framePending) return;
    this.framePending = true;
    this.cancelFrame = this.deps.frame(() => {
      this.framePending = false;
      this.set({ logVersion: this.buffer.version });
    });
  }

  get terminal(): boolean {
    return this.rs.run ? isTerminalRun(this.rs.run) : false;
  }

  /** Takes a run snapshot (REST, live, or a cancel's answer); a newly finished run loads its result and rank. */
  applyRun(r: RunView): void {
    if (r.id !== this.runId) return;
    const was = this.rs.run?.status;
    if (this.rs.setRun(r)) this.bump();
    if (isTerminalRun(r) && was !== r.status) {
      void this.loadResult();
      void this.loadRank();
    }
  }

  private async loadResult(): Promise<void> {
    try {
      this.rs.setResult(await this.deps.api<RunResultView>(`/api/runs/${this.runId}/result`));
      this.bump();
    } catch {
      // The live events carry the same data; the next reconnect retries.
    }
  }

  private async loadRank(): Promise<void> {
    try {
      this.set({ rank: await this.deps.api<RankView>(`/api/runs/${this.runId}/rank`), rankError: null });
    } catch (err) {
      this.set({ rankError: this.deps.errorMessage(err) });
    }
  }

  /** Loads the run, then follows it live until `stop`. */
  async start(): Promise<void> {
    const { deps, runId } = this;
    try {
      const r = await deps.api<RunView>(`/api/runs/${runId}`);
      this.applyRun(r);
      // The stored samples, checks and loss curve so far (a finished run loads them in applyRun);
      // live points append to them, each (name, step) once.
      if (!isTerminalRun(r)) void this.loadResult();
      deps
        .benchmarks()
        .then((all) => this.set({ benchmark: all.find((b) => b.id === r.benchmarkId) ?? null }))
        .catch(() => undefined);
    } catch (err) {
      this.set({ loadError: err });
      return;
    }
    if (this.stopped) return;
    const transport = deps.transport();
    const teamId = this.rs.run?.teamId ?? null;
    this.connected = transport.connected;
    this.set({ connected: this.connected });
    this.follower = new RunFollower(
      transport,
      { runId, teamId, pageSize: 5000, pollMs: deps.pollMs, backlogCheckMs: 1500 },
      {
        lines: (lines) => {
          if (this.buffer.add(lines)) this.bumpLog();
        },
        status: (r) => this.applyRun(r),
        sample: (s) => {
          if (this.rs.addSample(s)) this.bump();
        },
        check: (c) => {
          this.rs.addCheck(c);
          this.bump();
        },
        metric: (m) => {
          if (this.rs.addMetric(m)) this.bump();
        },
        result: (res) => {
          this.rs.setResult(res);
          this.bump();
          void this.loadRank();
        },
        connection: (up) => {
          this.connected = up;
          this.set(up ? { connected: true, liveError: null } : { connected: false });
        },
        joined: () => void this.loadResult(),
        joinFailed: (error) => this.set({ liveError: error.message }),
        revoked: (e) => {
          // Access is gone: say why and stop (no rejoin, no polling), instead of retrying forever.
          this.revoked = true;
          this.set({ revoked: e.message });
          clearInterval(this.poll);
        },
        ended: (r) => this.applyRun(r),
      },
    );
    this.follower.start();
    // While the live connection is down, poll the run too (the follower pages the log). A queued
    // run is polled anyway: why it waits changes with the agents, which send no run event.
    this.poll = setInterval(() => {
      if (this.terminal || this.revoked || (this.connected && this.rs.run?.status !== 'queued')) return;
      deps
        .api<RunView>(`/api/runs/${runId}`)
        .then((r) => this.applyRun(r))
        .catch(() => undefined);
    }, deps.pollMs);
    if (this.terminal) void this.loadRank();
  }

  stop(): void {
    this.stopped = true;
    this.follower?.stop();
    clearInterval(this.poll);
    this.cancelFrame?.();
    this.framePending = false;
  }
}
