import type { HarnessResultEvent, RunAssign, RunFinished } from '@dryft/libs';
import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import {
  candidateCacheKey,
  compileCacheRoot,
  entryDir,
  enforceSlotBound,
  prepareCompileCache,
} from './compile-cache';
import type { AgentConfig } from './config';
import { harnessLaunch } from './harness-command';
import { EventsChannel, HarnessEvents } from './harness-events';
import { HarnessProcess } from './harness-process';
import { tempPrefix, tempRoot } from './leftovers';
import { LogStreamer } from './log-streamer';
import { Outbox } from './outbox';
import type { PreparedRun } from './run-workspace';
import { prepareRun } from './run-workspace';
import type { StopReason } from './verdict';
import { failed, verdictFor } from './verdict';

/** What a run needs of the agent that holds it (its socket to the hub, its settings). */
export interface RunHost {
  config: AgentConfig;
  sandboxed: boolean;
  /** The versions the agent reported (GPU agents), repeated in each run's log. */
  runtime?: Record<string, string>;
  connected(): boolean;
  sendBatch: ConstructorParameters<typeof Outbox>[1];
  started(runId: string): Promise<void>;
  /** Resolves once the hub acknowledged the verdict (or refused it for good). */
  finished(msg: RunFinished): Promise<void>;
  handback(runId: string, reason: string): Promise<boolean>;
  log(message: string): void;
  /** The submission's size once downloaded (the agent's metrics). */
  downloaded?(bytes: number): void;
}

type Phase = 'preparing' | 'running' | 'finishing' | 'done';

/**
 * One run on one slot, from acceptance to the wiped folder (the job's lifecycle, as Buildkite's
 * run_job.go): prepare the workspace (run-workspace.ts); say it started; run the harness in the
 * sandbox (harness-command.ts, harness-process.ts) with its terminal (log-streamer.ts) and its events
 * (harness-events.ts) going into the outbox; enforce the whole-run deadline; report the verdict
 * (verdict.ts) only once every log batch is acknowledged; and wipe everything it wrote, always.
 */
export class RunJob {
  readonly outbox: Outbox;
  phase: Phase = 'preparing';
  private stopReason: StopReason | null = null;
  private stopMessage = '';
  private deadlineTimer?: NodeJS.Timeout;
  private readonly process: HarnessProcess;
  private readonly output: LogStreamer;
  private readonly events: HarnessEvents;
  readonly done: Promise<void>;
  private resolveDone!: () => void;
  private readonly runDir: string;
  private readonly cleanup: (() => Promise<unknown>)[] = [];

  constructor(
    readonly assign: RunAssign,
    private readonly host: RunHost,
    private readonly gpus: string[],
  ) {
    this.runDir = path.join(host.config.workDir, 'runs', assign.runId);
    this.outbox = new Outbox(
      assign.runId,
      host.sendBatch,
      host.connected,
      () => this.stop('lost', 'the server ended this run'),
      host.config.batchIntervalMs,
      host.log,
      assign.logs,
    );
    this.process = new HarnessProcess(host.config.cancelGraceMs, (text) => this.note(text));
    this.output = new LogStreamer(this.outbox);
    this.events = new HarnessEvents(this.outbox);
    this.done = new Promise((r) => (this.resolveDone = r));
  }

  get runId(): string {
    return this.assign.runId;
  }

  get started(): boolean {
    return this.phase !== 'preparing';
  }

  /** Runs it to the end; never throws (every failure becomes a verdict). */
  async execute(): Promise<void> {
    this.setDeadline(this.assign.deadlineAt);
    try {
      const prepared = await prepareRun({
        assign: this.assign,
        config: this.host.config,
        runDir: this.runDir,
        runtime: this.host.runtime,
        note: (text) => this.note(text),
        downloaded: (bytes) => this.host.downloaded?.(bytes),
      }).catch((err: Error) => {
        this.note(`could not prepare the run: ${err.message}`);
        return null;
      });
      // Not started yet: the run goes back to the queue for another agent, when the hub takes it.
      if (this.stopReason === 'shutdown' && !this.started) {
        if (await this.host.handback(this.runId, 'the agent is shutting down')) return;
      }
      let exitCode: number | null = null;
      let startFailure: HarnessResultEvent | null = null;
      if (prepared && !this.stopReason) {
        await this.host.started(this.runId).catch(() => undefined);
        this.phase = 'running';
        // The sandbox may be refused (a mount that holds the hub's data, say): a verdict, not a hang.
        exitCode = await this.runHarness(prepared).catch((err: Error) => {
          this.note(`could not start the evaluator: ${err.message}`);
          startFailure = failed('infra_error', `The GPU agent could not start the evaluator: ${err.message}`);
          return null;
        });
      }
      this.phase = 'finishing';
      this.output.flush();
      this.outbox.endOfLog();
      this.outbox.cut();
      await this.report(
        prepared === null && !this.stopReason
          ? failed('infra_error', 'The GPU agent could not prepare this run; retry once.')
          : startFailure,
        exitCode,
      );
    } catch (err) {
      this.host.log(`run ${this.runId}: ${(err as Error).stack ?? err}`);
    } finally {
      this.phase = 'done';
      if (this.deadlineTimer) clearTimeout(this.deadlineTimer);
      this.process.dispose();
      this.outbox.close();
      for (const c of this.cleanup) await c().catch(() => undefined);
      await fs
        .rm(this.runDir, { recursive: true, force: true })
        .catch((e: Error) => this.host.log(`could not wipe ${this.runDir}: ${e.message}`));
      this.resolveDone();
    }
  }

  /**
   * Cancel, deadline, shutdown or "no longer yours": the first reason is the one reported; the
   * harness's tree gets TERM, the grace, KILL (harness-process.ts). Idempotent.
   */
  stop(reason: StopReason, message: string): void {
    if (this.phase === 'done') return;
    if (!this.stopReason) {
      this.stopReason = reason;
      this.stopMessage = message;
    }
    this.process.stop(message);
  }

  setDeadline(deadlineAt: number): void {
    if (this.deadlineTimer) clearTimeout(this.deadlineTimer);
    const ms = Math.max(0, deadlineAt - Date.now());
    // Timers hold 32-bit milliseconds; a far deadline is re-armed on the way.
    this.deadlineTimer = setTimeout(
      () => {
        if (Date.now() >= deadlineAt)
          this.stop('deadline', "the run reached the organizer's whole-run time limit");
        else this.setDeadline(deadlineAt);
      },
      Math.min(ms, 2 ** 31 - 1),
    );
  }

  private note(text: string): void {
    this.outbox.line('agent', text);
  }

  /**
   * The candidate's persistent compile cache for this run (compile-cache.ts), or null: decode runs
   * in the sandbox only (the harness binds it into the candidate's jail). The log says which.
   */
  private async compileCache(): Promise<string | null> {
    const { config } = this.host;
    const key = candidateCacheKey(this.assign);
    if ('none' in key) return null;
    const say = (why: string) =>
      this.note(`compile cache: the candidate compiles from an empty cache (${why})`);
    if (!this.host.sandboxed) {
      say('no persistent compile cache without the sandbox');
      return null;
    }
    const root = compileCacheRoot(config.workDir);
    const ready = await prepareCompileCache({
      root,
      key,
      maxBytes: config.compileCache.maxBytesPerSlot,
      note: (text) => this.note(text),
    });
    if (ready.dir === null) {
      say(ready.why);
      return null;
    }
    this.cleanup.push(async () => {
      // What the run wrote counts too: the slot goes back under its bound (this team's cache last).
      const { removed } = await enforceSlotBound({
        root,
        slot: key.slot,
        maxBytes: config.compileCache.maxBytesPerSlot,
        keep: entryDir(root, key),
      });
      for (const dir of removed)
        this.host.log(`run ${this.runId}: compile cache: evicted ${dir} (over the slot's bound)`);
    });
    this.note(
      `compile cache: the candidate's compile caches persist between this team's runs of ${key.benchmarkId} (rules version ${key.rulesVersion}) on slot ${key.slot}, ${ready.bytes} bytes kept so far; no other team's run sees them, and the trusted engines start from empty ones`,
    );
    return ready.dir;
  }

  private async runHarness(prepared: PreparedRun): Promise<number | null> {
    const { config } = this.host;
    const compileCache = await this.compileCache();
    const channel = await EventsChannel.open(
      path.join(tempRoot(), tempPrefix(config.workDir)),
      (line) => this.events.line(line),
      (message) => this.note(message),
    );
    this.cleanup.push(() => channel.remove());
    const launch = await harnessLaunch({
      config,
      sandboxed: this.host.sandboxed,
      gpus: this.gpus,
      assign: this.assign,
      prepared,
      socketDir: channel.socketDir,
      socketPath: channel.socketPath,
      compileCache,
    });
    const exitCode = await this.process.run(launch, (data) => this.output.write(data));
    await channel.drain(2_000);
    return exitCode;
  }

  /**
   * The verdict, sent only after every log batch is acknowledged (the hub stores a verdict after
   * the lines it names, `lastSeq`); the host resends it until the hub acknowledges it, across
   * reconnects. Nothing is reported for a run the hub ended itself (a stop ack, a final refusal).
   */
  private async report(
    preparationFailure: HarnessResultEvent | null,
    exitCode: number | null,
  ): Promise<void> {
    const decided = verdictFor({
      stopReason: this.stopReason,
      stopMessage: this.stopMessage,
      preparationFailure,
      harnessResult: this.events.result,
      untrustedRunning: this.events.untrustedRunning,
      exitCode,
    });
    if (!decided) return; // the server already has the final state
    const { verdict, canceled, cancelReason } = decided;
    await this.outbox.drained();
    await this.host.finished({
      runId: this.runId,
      lastSeq: this.outbox.lastSeq,
      result: verdict,
      canceled,
      ...(cancelReason ? { cancelReason } : {}),
      exitCode,
    });
  }
}
