import { Inject, Injectable, Logger } from '@nestjs/common';
import { LATENCY_TRACE, traceMark, traceRename } from '../common/latency-trace';
import type { Ack, BatchAck, HarnessEvent, LogLine, RunBatch, RunFinished } from '@dryft/libs';
import { REMEASURE_MIN_SAMPLES, TERMINAL_STATUSES, agentRefusal, baselineKey, isUuid } from '@dryft/libs';
import { Clock } from '../common/clock';
import { EventBus } from '../common/event-bus';
import { CONFIG, Config } from '../config/config';
import { RunEntity } from './run.entity';
import { RunQueue, RunVerdict } from './run-queue';
import { ACTIVE_STATUSES, RunsRepository } from './runs.repository';
import { RunsService } from './runs.service';
import { capBatch } from './log-cap';
import { logChunk, newLines } from './log-chunk';
import { RunHead, RunHeads } from './run-heads';

type Emit = () => void;

/** What the hub says back about each run an agent reported holding when it (re)connected. */
export interface HeldRun {
  runId: string;
  /** The last batch stored: the agent resends from the next one. */
  ackedSeq: number;
  /** False: the run is no longer this agent's (ended, or never was); the agent drops it. */
  keep: boolean;
}

/**
 * What agents report about a run, stored exactly once. Batches are numbered per run: a batch at or
 * below the stored seq is a resend (acked, not stored again); one beyond the next is refused with the
 * stored seq so the agent resends from there. The run row is locked per batch, so one run's batches
 * and its verdict are applied in order even across API replicas.
 */
@Injectable()
export class RunLifecycleService {
  private readonly logger = new Logger('RunLifecycle');
  /** Where each running run's log stands, as this process last stored it ({@link storeInHead}). */
  readonly heads = new RunHeads();

  constructor(
    private readonly runs: RunsRepository,
    private readonly queue: RunQueue,
    private readonly runsService: RunsService,
    private readonly clock: Clock,
    private readonly bus: EventBus,
    @Inject(CONFIG) private readonly config: Config,
  ) {}

  async markStarted(runId: string, agentId: string): Promise<void> {
    const run = await this.queue.markRunning(runId, this.clock.now());
    if (run && run.agentId === agentId) {
      // Its first batch can take the one-statement path too.
      this.rememberHead(runId, run);
      this.bus.emit('run.status', { run: await this.runsService.view(run) });
    }
  }

  async renewLeases(agentId: string, runIds: string[], until: Date): Promise<void> {
    await this.queue.renewLeases(agentId, runIds, until);
  }

  private leaseFromNow(): Date {
    return new Date(this.clock.now().getTime() + this.config.AGENT_LEASE_SECONDS * 1000);
  }

  /**
   * An agent (re)connected and said which runs it still holds. An id that is not a UUID names no
   * run: it is reported as not kept, never sent to the database. A run failed only because its
   * lease lapsed while this agent was out of touch is still this agent's: back on. The runs kept get
   * a fresh lease; the runs the hub gave this agent that it no longer holds (it restarted) go back
   * to the queue when they never started, and fail as infra_error when they did.
   */
  async reconcile(agentId: string, held: string[]): Promise<HeldRun[]> {
    const ids = held.filter(isUuid);
    await this.reinstate(agentId, ids);
    const reported = await this.queue.runsByIds(ids);
    const runs = held.map((runId) => {
      const row = reported.find((x) => x.id === runId);
      const keep = Boolean(
        row && row.agentId === agentId && (row.status === 'assigned' || row.status === 'running'),
      );
      return { runId, ackedSeq: row?.lastBatchSeq ?? 0, keep };
    });
    const kept = runs.filter((r) => r.keep).map((r) => r.runId);
    await this.renewLeases(agentId, kept, this.leaseFromNow());
    for (const lost of await this.queue.activeRunsByAgent([agentId])) {
      if (kept.includes(lost.id)) continue;
      if (!(await this.queue.requeue(lost.id, agentId))) {
        await this.failForLostLease(lost.id, agentId, 'the agent restarted and no longer holds the run');
      }
    }
    return runs;
  }

  /**
   * A heartbeat: the runs the agent names are renewed (or reinstated after a lapsed lease); returns
   * those it must stop because they are not (any longer) its own active runs.
   */
  async heartbeat(agentId: string, held: string[]): Promise<string[]> {
    const until = this.leaseFromNow();
    const ids = held.filter(isUuid);
    await this.reinstate(agentId, ids);
    await this.renewLeases(agentId, ids, until);
    const rows = await this.queue.runsByIds(ids);
    return held.filter((id) => {
      const row = rows.find((r) => r.id === id);
      return !row || row.agentId !== agentId || !(row.status === 'assigned' || row.status === 'running');
    });
  }

  /** Puts an assigned, never-started run back in the queue (its agent handed it back). */
  handBack(runId: string, agentId: string): Promise<boolean> {
    return this.queue.requeue(runId, agentId);
  }

  async storeBatch(runId: string, agentId: string, batch: RunBatch): Promise<BatchAck> {
    const after: Emit[] = [];
    let reinstated = false;
    const trace =
      LATENCY_TRACE && batch.entries[0]?.type === 'log' ? `batch:${runId}:${batch.entries[0].n}` : '';
    if (trace) traceMark(trace, 'serial');
    const quick = await this.storeInHead(runId, agentId, batch);
    if (quick) {
      if (trace) traceMark(trace, 'committed');
      return quick;
    }
    let storedRun: RunEntity | undefined;
    const ack = await this.runs.transaction(async (tx): Promise<BatchAck> => {
      if (trace) traceMark(trace, 'begun');
      let run = await tx.lock(runId);
      if (trace) traceMark(trace, 'locked');
      if (!run || run.agentId !== agentId)
        return {
          ...agentRefusal('run_not_assigned', 'This run is not assigned to this agent.'),
          ackedSeq: 0,
          stop: true,
        };
      if (run.status === 'failed' && run.leaseLostAt && (await this.reinstateLocked(tx, run))) {
        run = (await tx.lock(runId))!;
        reinstated = true;
      }
      if (!ACTIVE_STATUSES.includes(run.status)) return { ok: true, ackedSeq: run.lastBatchSeq, stop: true };
      if (batch.seq <= run.lastBatchSeq) return { ok: true, ackedSeq: run.lastBatchSeq };
      if (batch.seq > run.lastBatchSeq + 1) {
        return {
          ...agentRefusal('batch_out_of_order', `Expected batch ${run.lastBatchSeq + 1}; resend from there.`),
          ackedSeq: run.lastBatchSeq,
        };
      }
      const lines: LogLine[] = [];
      for (const entry of batch.entries) {
        if (entry.type === 'log') {
          lines.push({ seq: entry.n, ts: entry.ts, stream: entry.stream, text: entry.text });
        } else {
          await this.applyEvent(tx, run, entry.event, after);
        }
      }
      // The log cap: the head is stored now, lines past it wait in the run's tail for its end.
      const stored = capBatch(
        run,
        newLines(lines, run.lastLogSeq),
        this.runsService.logLimits(run.benchmarkId),
      );
      await tx.insertLogs(run.id, stored, run.lastLogSeq);
      if (trace) traceMark(trace, 'inserted');
      run.lastBatchSeq = batch.seq;
      if (stored.length) run.lastLogSeq = stored[stored.length - 1].seq;
      const starting = run.status === 'assigned';
      if (starting) {
        run.status = 'running';
        run.startedAt = this.clock.now();
      }
      await this.queue.within(tx).recordBatch(run);
      if (trace) traceMark(trace, 'recorded');
      storedRun = run;
      if (stored.length) after.unshift(() => this.bus.emit('run.logs', { runId, lines: stored }));
      if (starting)
        after.unshift(
          () => void this.runsService.view(run).then((view) => this.bus.emit('run.status', { run: view })),
        );
      return { ok: true, ackedSeq: run.lastBatchSeq };
    });
    if (trace) traceMark(trace, 'committed');
    this.rememberHead(runId, storedRun);
    if (reinstated) await this.announceStatus(runId);
    for (const emit of after) emit();
    if (trace) traceMark(trace, 'emitted');
    return ack;
  }

  /**
   * The common batch, stored in one round trip: the log lines of a running run whose log is
   * still within its head, the next seq after what this process stored last. The statement writes
   * only if the run row still holds what this process stored ({@link RunQueue.recordHeadBatch});
   * null when this batch is not such a batch or the row moved on, and the locked path decides.
   * Watchers get the lines after the commit, the agent its ack after them: as on the locked path.
   */
  private async storeInHead(runId: string, agentId: string, batch: RunBatch): Promise<BatchAck | null> {
    const was = this.heads.get(runId);
    if (!was || was.agentId !== agentId || batch.seq !== was.lastBatchSeq + 1) return null;
    const lines: LogLine[] = [];
    for (const entry of batch.entries) {
      if (entry.type !== 'log') return null;
      lines.push({ seq: entry.n, ts: entry.ts, stream: entry.stream, text: entry.text });
    }
    const counted = { logLines: was.logLines, logBytes: was.logBytes, logTail: null as RunEntity['logTail'] };
    const stored = capBatch(
      counted,
      newLines(lines, was.lastLogSeq),
      this.runsService.logLimits(was.benchmarkId),
    );
    // The head is full: the locked path opens the run's tail.
    if (counted.logTail) return null;
    const now: RunHead = {
      ...was,
      lastBatchSeq: batch.seq,
      // In seq order (newLines), so the last one stored is the highest.
      lastLogSeq: stored.length ? stored[stored.length - 1].seq : was.lastLogSeq,
      logLines: counted.logLines,
      logBytes: counted.logBytes,
    };
    if (!(await this.queue.recordHeadBatch(was, now, stored.length ? logChunk(stored) : null))) {
      this.heads.forget(runId);
      return null;
    }
    this.heads.remember(now);
    if (stored.length) this.bus.emit('run.logs', { runId, lines: stored });
    return { ok: true, ackedSeq: now.lastBatchSeq };
  }

  /**
   * After the run started or the locked path answered a batch (`run`: what it stored, if it stored):
   * the next batch may take {@link storeInHead} while the run runs within its log head.
   */
  private rememberHead(runId: string, run: RunEntity | undefined): void {
    if (!run || run.status !== 'running' || run.logTail || !run.agentId) {
      this.heads.forget(runId);
      return;
    }
    this.heads.remember({
      runId: run.id,
      agentId: run.agentId,
      benchmarkId: run.benchmarkId,
      lastBatchSeq: run.lastBatchSeq,
      lastLogSeq: run.lastLogSeq,
      logLines: run.logLines,
      logBytes: String(run.logBytes),
    });
  }

  /** {@link reinstate} inside a batch's or verdict's transaction (the run row is locked). */
  private async reinstateLocked(tx: RunsRepository, run: RunEntity): Promise<boolean> {
    return (await this.reinstateRows(tx, run.agentId!, [run.id])).length > 0;
  }

  private async announceStatus(runId: string): Promise<void> {
    const run = await this.runs.findById(runId);
    if (run) this.bus.emit('run.status', { run: await this.runsService.view(run) });
  }

  private async applyEvent(
    tx: RunsRepository,
    run: RunEntity,
    event: HarnessEvent,
    after: Emit[],
  ): Promise<void> {
    const runId = run.id;
    switch (event.type) {
      case 'sample': {
        await tx.upsertSample(runId, event);
        const { type: _t, batchSize: _b, promptLength: _p, peakMemoryBytes: _m, ...sample } = event;
        after.push(() => this.bus.emit('run.sample', { runId, sample }));
        return;
      }
      case 'check': {
        await tx.upsertCheck(runId, event);
        after.push(() =>
          this.bus.emit('run.check', {
            runId,
            check: { name: event.name, passed: event.passed, detail: event.detail },
          }),
        );
        return;
      }
      case 'metric': {
        await tx.upsertMetric(runId, event);
        after.push(() =>
          this.bus.emit('run.metric', {
            runId,
            metric: { name: event.name, step: event.step, value: event.value, elapsedMs: event.elapsedMs },
          }),
        );
        return;
      }
      case 'baseline':
        // Only an official run's baseline, measured paired with its candidate, becomes the cache
        // public runs are scored against (and an organizer's re-measure, from its verdict: see
        // `finish`). A public run's own baseline measurement is never cached.
        if (run.mode !== 'official' || event.paired !== true) {
          this.logger.log(`run ${runId}: baseline figures not cached (${run.mode}, unpaired)`);
          return;
        }
        await tx.upsertBaseline(run.benchmarkId, run.rulesVersion, {
          hardware: baselineKey(event.hardware),
          workloads: event.workloads,
        });
        return;
      case 'log':
      case 'result':
        // Harness log lines arrive as log entries; the verdict arrives with run.finished.
        return;
    }
  }

  /** The verdict, applied once; a resend after a lost ack is answered ok without changing anything. */
  async finish(runId: string, agentId: string, finished: RunFinished): Promise<Ack> {
    this.heads.forget(runId);
    let reinstated = false;
    let endLines: LogLine[] = [];
    const outcome = await this.runs.transaction(async (tx): Promise<{ ack: Ack; run?: RunEntity }> => {
      let run = await tx.lock(runId);
      if (!run) return { ack: agentRefusal('run_not_found', 'No such run.') };
      if (
        run.status === 'failed' &&
        run.leaseLostAt &&
        run.agentId === agentId &&
        (await this.reinstateLocked(tx, run))
      ) {
        run = (await tx.lock(runId))!;
        reinstated = true;
      }
      if (TERMINAL_STATUSES.includes(run.status)) return { ack: { ok: true } };
      if (run.agentId !== agentId)
        return { ack: agentRefusal('run_not_assigned', 'This run is not assigned to this agent.') };
      if (finished.lastSeq > run.lastBatchSeq) {
        return {
          ack: agentRefusal(
            'batches_missing',
            `Batches up to ${finished.lastSeq} are not all stored (have ${run.lastBatchSeq}); resend them first.`,
          ),
        };
      }
      endLines = await this.runsService.storeEndOfLog(tx, run);
      const verdict = verdictOf(run, finished, this.clock.now());
      await this.queue.within(tx).finish(run.id, verdict);
      // An organizer's baseline re-measure that succeeded replaces the cache of its one hardware key.
      const measured = finished.result.baseline;
      if (run.mode === 'baseline' && verdict.status === 'succeeded' && measured && run.hardware)
        await tx.upsertBaseline(run.benchmarkId, run.rulesVersion, {
          hardware: run.hardware,
          workloads: measured.workloads,
        });
      Object.assign(run, verdict, { leaseExpiresAt: null });
      return { ack: { ok: true }, run };
    });
    // A reinstated run is announced once: with its verdict, or as running again if that was refused.
    if (endLines.length) this.bus.emit('run.logs', { runId, lines: endLines });
    if (outcome.run) await this.announceFinal(outcome.run);
    else if (reinstated) await this.announceStatus(runId);
    return outcome.ack;
  }

  /** The agent stopped renewing its lease: the run fails as infra_error and is never run again. */
  async failForLostLease(
    runId: string,
    agentId: string,
    reason: string,
    opts: { lapsed?: boolean } = {},
  ): Promise<boolean> {
    return this.failActive(
      runId,
      agentId,
      `The GPU agent stopped responding (${reason}). This is not your engine's fault; retry once.`,
      opts.lapsed === true,
    );
  }

  /**
   * The agent that held a run whose lease lapsed reports it again (heartbeat, reconnect, batch or
   * verdict): it still holds the run, so the run goes back to where it was and its lines and verdict
   * are stored. Only the sweeper's lapsed-lease failure is undone (never a revoke, a cancel, or a run
   * the agent said it lost), only for that same agent, and only before the whole-run deadline (plus
   * grace). Such a run was never queued again, so no other agent can have executed it.
   */
  async reinstate(agentId: string, runIds: string[]): Promise<string[]> {
    if (runIds.length === 0) return [];
    const ids = await this.reinstateRows(this.runs, agentId, runIds);
    for (const id of ids) await this.announceStatus(id);
    return ids;
  }

  /** The conditional UPDATE behind {@link reinstate}: only lapsed-lease failures of this agent, before the deadline. */
  private async reinstateRows(repo: RunsRepository, agentId: string, runIds: string[]): Promise<string[]> {
    const now = this.clock.now();
    const ids = await this.queue.within(repo).reinstate(agentId, runIds, {
      leaseUntil: new Date(now.getTime() + this.config.AGENT_LEASE_SECONDS * 1000),
      graceSeconds: this.config.DEADLINE_GRACE_SECONDS,
      now,
    });
    for (const id of ids)
      this.logger.warn(`run ${id}: its agent ${agentId} still holds it after its lease lapsed; reinstated`);
    return ids;
  }

  async failInfra(runId: string, agentId: string | null, message: string): Promise<boolean> {
    return this.failActive(runId, agentId, message, false);
  }

  /** The server enforces the whole-run limit even when no agent reports. */
  async failForDeadline(runId: string): Promise<boolean> {
    const run = await this.runs.findById(runId);
    if (!run || !ACTIVE_STATUSES.includes(run.status)) return false;
    const limit = run.runTimeLimitSeconds;
    const res = await this.runsService.cancelRun(
      runId,
      `Canceled: the run exceeded the organizer's whole-run time limit of ${limit} s.`,
      `whole-run time limit (${limit} s) exceeded`,
    );
    return res.changed;
  }

  private async failActive(
    runId: string,
    agentId: string | null,
    message: string,
    leaseLost: boolean,
  ): Promise<boolean> {
    const at = this.clock.now();
    await this.runsService.flushLogTail(runId);
    const run = await this.queue.failInfra(runId, { message, at, leaseLost });
    if (!run) return false;
    if (agentId && run.agentId !== agentId)
      this.logger.warn(`run ${runId} failed for agent ${agentId} but belonged to ${run.agentId}`);
    await this.announceFinal(run);
    return true;
  }

  private async announceFinal(run: RunEntity): Promise<void> {
    // First, before any other read: the public board snapshots drop the old board at once, so a
    // client that sees the run succeeded never reads the board without it.
    if (run.mode === 'official' && run.status === 'succeeded') {
      if (LATENCY_TRACE) {
        traceRename(`fin:${run.id}`, `board:${run.benchmarkId}`);
        traceMark(`board:${run.benchmarkId}`, 'committed');
      }
      this.bus.emit('leaderboard.changed', { benchmarkId: run.benchmarkId });
    }
    const view = await this.runsService.view(run);
    this.bus.emit('run.status', { run: view });
    this.bus.emit('run.result', { runId: run.id, result: await this.runsService.resultOf(run) });
    this.bus.emit('run.finished', { runId: run.id, agentId: run.agentId, slot: run.slot });
  }
}

/**
 * The stored verdict of an agent's run.finished: canceled, succeeded with its score, or failed
 * with its code (harness_error when the harness named none). Infrastructure and harness failures
 * are ours, not the team's: they do not count against the daily limit; a cancel that lands before
 * the run started is refunded too. A timeout at the whole-run deadline names the limit that applied
 * (the organizer may have lowered it while the run was going).
 */
export function verdictOf(run: RunEntity, finished: RunFinished, now: Date): RunVerdict {
  const r = finished.result;
  let status: RunVerdict['status'];
  let score = run.score;
  let scoreInterval = run.scoreInterval;
  let failureCode = run.failureCode;
  let message: string | null = r.message;
  const remeasureFault = run.mode === 'baseline' ? remeasureProblem(run, finished) : null;
  if (finished.canceled) {
    status = 'canceled';
  } else if (remeasureFault) {
    status = 'failed';
    failureCode = 'harness_error';
    score = null;
    message = remeasureFault;
  } else if (r.status === 'succeeded') {
    status = 'succeeded';
    score = r.score;
    scoreInterval = r.interval ?? null;
    failureCode = null;
  } else {
    status = 'failed';
    failureCode = r.failureCode ?? 'harness_error';
    score = null;
    if (failureCode === 'timeout' && run.deadlineAt && now.getTime() >= run.deadlineAt.getTime() - 1000)
      message = `${r.message} The whole-run time limit in force was ${run.runTimeLimitSeconds} s.`;
  }
  const refunded =
    run.quotaRefunded ||
    failureCode === 'infra_error' ||
    failureCode === 'harness_error' ||
    (status === 'canceled' && !run.startedAt);
  return {
    status,
    finishedAt: now,
    workloads: r.workloads,
    metrics: r.metrics,
    detail: r.detail ?? null,
    message,
    pairs: r.pairs ?? null,
    score,
    scoreInterval,
    failureCode,
    quotaRefunded: refunded,
  };
}

/**
 * Why a baseline re-measure that says it succeeded cannot be cached (null when it can): its figures
 * must be there, on the run's own hardware key, from at least REMEASURE_MIN_SAMPLES timed samples
 * per workload, for every workload of its spec.
 */
function remeasureProblem(run: RunEntity, finished: RunFinished): string | null {
  const r = finished.result;
  if (r.status !== 'succeeded') return null;
  const m = r.baseline;
  if (!m) return 'The baseline re-measure reported no baseline figures; nothing was cached.';
  if (baselineKey(m.hardware) !== run.hardware)
    return `The baseline was measured on ${m.hardware}, not on ${run.hardware} as requested; nothing was cached.`;
  if (m.samples < REMEASURE_MIN_SAMPLES)
    return `The baseline re-measure took ${m.samples} samples per workload, fewer than ${REMEASURE_MIN_SAMPLES}; nothing was cached.`;
  const missing = run.spec.kind === 'decode' ? run.spec.workloads.filter((w) => !m.workloads[w.name]) : [];
  if (missing.length)
    return `The baseline re-measure has no figures for ${missing.map((w) => w.name).join(', ')}; nothing was cached.`;
  return null;
}
