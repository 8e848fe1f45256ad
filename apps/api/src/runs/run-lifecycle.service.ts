import { Inject, Injectable, Logger } from '@nestjs/common';
import { LATENCY_TRACE, traceMark, traceRename } from '../common/latency-trace';
import type {
  Ack,
  BaselineFigures,
  BatchAck,
  HarnessEvent,
  LogLine,
  RunBatch,
  RunFinished,
  RunView,
} from '@dryft/libs';
import {
  CALIBRATION_MIN_PAIRS,
  REMEASURE_MIN_SAMPLES,
  TERMINAL_STATUSES,
  RUN_TIME_LIMIT,
  agentRefusal,
  baselineKey,
  isUuid,
  poolCalibration,
  wholeRunLimitCancelReason,
  wholeRunLimitMessage,
} from '@dryft/libs';
import { Clock } from '../common/clock';
import { EventBus } from '../common/event-bus';
import { CONFIG, Config } from '../config/config';
import type { CalibrationRunEntity } from './calibration-run.entity';
import { RunEntity } from './run.entity';
import { RunLog } from './run-log';
import { RunQueue, RunVerdict } from './run-queue';
import { RunViews } from './run-views';
import { ACTIVE_STATUSES, RunsRepository } from './runs.repository';
import { forRun } from '../common/logging';

type Emit = () => void;

/** What the hub says back about each run an agent reported holding when it (re)connected. */
export interface HeldRun {
  runId: string;
  /** The last batch stored: the agent resends from the next one. */
  ackedSeq: number;
  /** False: the run is no longer this agent's (ended, or never was); the agent drops it. */
  keep: boolean;
  /**
   * A kept run's whole-run deadline (epoch ms; null for a run not kept or without one): the
   * agent's is out of date when the organizer changed the limit while it was away.
   */
  deadlineAt: number | null;
}

/**
 * What agents report about a run, stored exactly once. Batches are numbered per run: a batch at or
 * below the stored seq is a resend (acked, not stored again); one beyond the next is refused with the
 * stored seq so the agent resends from there. The run row is locked per batch, so one run's batches
 * and its verdict are applied in order even across API replicas. Every end of a run goes through
 * here (verdict, lost lease, revoke, cancel, deadline); its log is RunLog's, its views RunViews'.
 */
@Injectable()
export class RunLifecycleService {
  private readonly logger = new Logger('RunLifecycle');

  constructor(
    private readonly runs: RunsRepository,
    private readonly queue: RunQueue,
    private readonly log: RunLog,
    private readonly views: RunViews,
    private readonly clock: Clock,
    private readonly bus: EventBus,
    @Inject(CONFIG) private readonly config: Config,
  ) {}

  async markStarted(runId: string, agentId: string): Promise<void> {
    const run = await this.queue.markRunning(runId, this.clock.now());
    if (run && run.agentId === agentId) {
      // Its first batch can take the one-statement path too.
      this.log.rememberHead(runId, run);
      this.bus.emit('run.status', { run: await this.views.view(run) });
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
   * a fresh lease and their deadline as it is now (a `run.deadline` sent while the agent was away
   * never reached it); the runs the hub gave this agent that it no longer holds (it restarted) go back
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
      const deadlineAt = keep ? (row?.deadlineAt?.getTime() ?? null) : null;
      return { runId, ackedSeq: row?.lastBatchSeq ?? 0, keep, deadlineAt };
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
    const started = performance.now();
    try {
      return await this.storeBatchTimed(runId, agentId, batch);
    } finally {
      this.bus.emit('run.batch_handled', { runId, seconds: (performance.now() - started) / 1000 });
    }
  }

  private async storeBatchTimed(runId: string, agentId: string, batch: RunBatch): Promise<BatchAck> {
    const after: Emit[] = [];
    let reinstated: RunEntity | undefined;
    const trace =
      LATENCY_TRACE && batch.entries[0]?.type === 'log' ? `batch:${runId}:${batch.entries[0].n}` : '';
    if (trace) traceMark(trace, 'serial');
    // The common batch, in one round trip (RunLog.storeInHead); null: the locked path decides.
    // Watchers get the lines after the commit, the agent its ack after them: as on the locked path.
    const quick = await this.log.storeInHead(runId, agentId, batch);
    if (quick) {
      if (trace) traceMark(trace, 'committed');
      if (quick.lines.length) this.bus.emit('run.logs', { runId, lines: quick.lines });
      return { ok: true, ackedSeq: quick.ackedSeq };
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
      reinstated = await this.reinstateLapsed(tx, run);
      run = reinstated ?? run;
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
      const stored = await this.log.append(tx, run, lines);
      if (trace) traceMark(trace, 'inserted');
      run.lastBatchSeq = batch.seq;
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
          () => void this.views.view(run).then((view) => this.bus.emit('run.status', { run: view })),
        );
      return { ok: true, ackedSeq: run.lastBatchSeq };
    });
    if (trace) traceMark(trace, 'committed');
    this.log.rememberHead(runId, storedRun);
    // Announced as this transaction left it (running again, with this batch if it was stored): not read again.
    if (reinstated) this.bus.emit('run.status', { run: await this.views.view(reinstated) });
    for (const emit of after) emit();
    if (trace) traceMark(trace, 'emitted');
    return ack;
  }

  /**
   * {@link reinstate} inside a batch's or verdict's transaction, the run row locked: a run its agent
   * reports after the sweeper failed it for a lapsed lease comes back, read again as it is now; any
   * other run is left as it is (undefined).
   */
  private async reinstateLapsed(tx: RunsRepository, run: RunEntity): Promise<RunEntity | undefined> {
    if (run.status !== 'failed' || !run.leaseLostAt) return undefined;
    const back = await this.reinstateRows(tx, run.agentId!, [run.id]);
    return back.length > 0 ? ((await tx.lock(run.id)) ?? undefined) : undefined;
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
          this.logger.log(`run ${runId}: baseline figures not cached (${run.mode}, unpaired)`, forRun(runId));
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
    this.log.forgetHead(runId);
    let reinstated: RunEntity | undefined;
    let endLines: LogLine[] = [];
    let calibrated = false;
    const outcome = await this.runs.transaction(async (tx): Promise<{ ack: Ack; run?: RunEntity }> => {
      let run = await tx.lock(runId);
      if (!run) return { ack: agentRefusal('run_not_found', 'No such run.') };
      if (run.agentId === agentId) reinstated = await this.reinstateLapsed(tx, run);
      run = reinstated ?? run;
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
      endLines = await this.log.storeEnd(tx, run);
      // What the verdict stores is decided first, then written in one go.
      const verdict = verdictOf(run, finished, this.clock.now());
      const baseline = remeasuredBaseline(run, finished, verdict);
      const calibration = calibrationRunOf(run, finished, verdict);
      await this.queue.within(tx).finish(run.id, verdict);
      if (baseline) await tx.upsertBaseline(run.benchmarkId, run.rulesVersion, baseline);
      if (calibration) {
        await tx.addCalibrationRun(calibration, (rows) => {
          const pooled = poolCalibration(calibration.hardware, rows);
          return { k: pooled.k, detail: pooled.workloads };
        });
        calibrated = true;
      }
      Object.assign(run, verdict, { leaseExpiresAt: null });
      return { ack: { ok: true }, run };
    });
    // A reinstated run is announced once: with its verdict, or as running again if that was refused.
    if (endLines.length) this.bus.emit('run.logs', { runId, lines: endLines });
    if (calibrated && outcome.run)
      this.bus.emit('benchmark.calibrated', { benchmarkId: outcome.run.benchmarkId });
    if (outcome.run) await this.announceFinal(outcome.run);
    else if (reinstated) this.bus.emit('run.status', { run: await this.views.view(reinstated) });
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
    for (const id of ids) {
      const view = await this.views.viewById(id);
      if (view) this.bus.emit('run.status', { run: view });
    }
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
      this.logger.warn(
        `run ${id}: its agent ${agentId} still holds it after its lease lapsed; reinstated`,
        forRun(id, { agentId }),
      );
    return ids;
  }

  async failInfra(runId: string, agentId: string | null, message: string): Promise<boolean> {
    return this.failActive(runId, agentId, message, false);
  }

  /**
   * The server enforces the whole-run limit even when no agent reports: canceled, in the same words
   * as a run its agent stopped at the deadline ({@link verdictOf}).
   */
  async failForDeadline(runId: string): Promise<boolean> {
    const run = await this.runs.findById(runId);
    if (!run || !ACTIVE_STATUSES.includes(run.status)) return false;
    const limit = run.runTimeLimitSeconds;
    const res = await this.cancelRun(runId, wholeRunLimitMessage(limit), wholeRunLimitCancelReason(limit));
    return res.changed;
  }

  /**
   * → canceled: a member's cancel, a ban, the whole-run limit. A run canceled before it started
   * (queued or assigned) is refunded: it does not count against the daily limit.
   */
  async cancelRun(
    runId: string,
    message: string,
    reason: string,
  ): Promise<{ run: RunView; changed: boolean; message: string }> {
    await this.flushLogTail(runId);
    const changed = await this.queue.cancel(runId, { reason, message, at: this.clock.now() });
    const current = changed ?? (await this.runs.findById(runId))!;
    const view = await this.views.view(current);
    if (changed) {
      this.bus.emit('run.status', { run: view });
      this.bus.emit('run.cancel_requested', { runId, agentId: current.agentId, reason });
      this.bus.emit('run.finished', { runId, agentId: current.agentId, slot: current.slot, run: view });
    }
    return {
      run: view,
      changed: Boolean(changed),
      message: changed ? 'Run canceled.' : `Run already ${current.status}; nothing to cancel.`,
    };
  }

  /** Before a run ends without its agent's verdict (lost, revoked, canceled): the end of its log is stored and sent. */
  private async flushLogTail(runId: string): Promise<void> {
    const lines = await this.log.flushTail(runId);
    if (lines.length) this.bus.emit('run.logs', { runId, lines });
  }

  private async failActive(
    runId: string,
    agentId: string | null,
    message: string,
    leaseLost: boolean,
  ): Promise<boolean> {
    const at = this.clock.now();
    await this.flushLogTail(runId);
    const run = await this.queue.failInfra(runId, { message, at, leaseLost });
    if (!run) return false;
    if (agentId && run.agentId !== agentId)
      this.logger.warn(
        `run ${runId} failed for agent ${agentId} but belonged to ${run.agentId}`,
        forRun(runId, { agentId }),
      );
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
    const view = await this.views.view(run);
    this.bus.emit('run.status', { run: view });
    this.bus.emit('run.result', { runId: run.id, result: await this.views.resultOf(run) });
    this.bus.emit('run.finished', { runId: run.id, agentId: run.agentId, slot: run.slot, run: view });
  }
}

/**
 * Whether the agent stopped this run at the organizer's whole-run deadline: it says so (canceled,
 * `run_time_limit`), or, an older agent, it reports a `timeout` within a second of the deadline (a
 * sample over its own budget times out long before; the second covers the agent's clock and the
 * harness's TERM grace ending just before the deadline it was stopped for).
 */
function stoppedAtWholeRunLimit(run: RunEntity, finished: RunFinished, now: Date): boolean {
  if (finished.canceled) return finished.cancelReason === RUN_TIME_LIMIT;
  const r = finished.result;
  return (
    r.status === 'failed' &&
    r.failureCode === 'timeout' &&
    run.deadlineAt !== null &&
    now.getTime() >= run.deadlineAt.getTime() - 1000
  );
}

/**
 * The stored verdict of an agent's run.finished: canceled, succeeded with its score, or failed
 * with its code (harness_error when the harness named none). Infrastructure and harness failures
 * are ours, not the team's: they do not count against the daily limit; a cancel that lands before
 * the run started is refunded too. A run its agent stopped at the whole-run deadline is canceled
 * exactly as the hub's deadline sweep cancels it (the same message and reason, naming the limit in
 * force: the organizer may have changed it while the run was going); started, it counts.
 */
export function verdictOf(run: RunEntity, finished: RunFinished, now: Date): RunVerdict {
  const r = finished.result;
  let status: RunVerdict['status'];
  let score = run.score;
  let scoreInterval = run.scoreInterval;
  let failureCode = run.failureCode;
  let message: string | null = r.message;
  let cancelReason = run.cancelReason;
  const remeasureFault =
    run.mode === 'baseline'
      ? remeasureProblem(run, finished)
      : run.mode === 'calibration'
        ? calibrationProblem(run, finished)
        : null;
  if (stoppedAtWholeRunLimit(run, finished, now)) {
    status = 'canceled';
    failureCode = null;
    score = null;
    message = wholeRunLimitMessage(run.runTimeLimitSeconds);
    cancelReason = wholeRunLimitCancelReason(run.runTimeLimitSeconds);
  } else if (finished.canceled) {
    status = 'canceled';
  } else if (remeasureFault) {
    status = 'failed';
    failureCode = 'harness_error';
    score = null;
    message = remeasureFault;
  } else if (r.status === 'succeeded') {
    status = 'succeeded';
    // A re-measure or calibration has no score, whatever its harness said.
    score = run.mode === 'baseline' || run.mode === 'calibration' ? null : r.score;
    scoreInterval = r.interval ?? null;
    failureCode = null;
  } else {
    status = 'failed';
    failureCode = r.failureCode ?? 'harness_error';
    score = null;
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
    cancelReason,
    pairs: r.pairs ?? null,
    score,
    scoreInterval,
    absoluteInterval: status === 'succeeded' ? (r.absoluteInterval ?? null) : null,
    scoring: r.scoring ?? null,
    // Only an official run's prompts are drawn with a nonce worth keeping for an audit.
    promptNonce: run.mode === 'official' ? (r.promptNonce ?? null) : null,
    failureCode,
    quotaRefunded: refunded,
  };
}

/** An organizer's baseline re-measure that succeeded replaces the cache of its one hardware key. */
function remeasuredBaseline(
  run: RunEntity,
  finished: RunFinished,
  verdict: RunVerdict,
): BaselineFigures | null {
  const measured = finished.result.baseline;
  if (run.mode !== 'baseline' || verdict.status !== 'succeeded' || !measured || !run.hardware) return null;
  return { hardware: run.hardware, workloads: measured.workloads };
}

/** A calibration run that succeeded (and passed calibrationProblem) adds its pairs to its key's K. */
function calibrationRunOf(
  run: RunEntity,
  finished: RunFinished,
  verdict: RunVerdict,
): Omit<CalibrationRunEntity, 'createdAt'> | null {
  const cal = finished.result.calibration;
  if (run.mode !== 'calibration' || verdict.status !== 'succeeded' || !cal || !run.hardware) return null;
  return {
    runId: run.id,
    benchmarkId: run.benchmarkId,
    rulesVersion: run.rulesVersion,
    hardware: run.hardware,
    agentName: run.agentName,
    workloads: calibrationWorkloads(run, cal),
    pairs: cal.pairs,
    seconds: cal.seconds,
    halfWidthPct: cal.halfWidthPct,
  };
}

/** The spec's workloads' ratios of a calibration result (calibrationProblem checked they are there). */
function calibrationWorkloads(
  run: RunEntity,
  cal: NonNullable<RunFinished['result']['calibration']>,
): Record<string, { ratios: number[] }> {
  const names =
    run.spec.kind === 'decode' ? run.spec.workloads.map((w) => w.name) : Object.keys(cal.workloads);
  return Object.fromEntries(names.map((n) => [n, { ratios: cal.workloads[n].ratios }]));
}

/**
 * Why a calibration run that says it succeeded cannot be pooled (null when it can): its pairs must
 * be there, measured on the run's own hardware key, for every workload of its spec, at least
 * CALIBRATION_MIN_PAIRS finite positive ratios each.
 */
function calibrationProblem(run: RunEntity, finished: RunFinished): string | null {
  const r = finished.result;
  if (r.status !== 'succeeded') return null;
  const c = r.calibration;
  if (!c) return 'The calibration run reported no pairs; nothing was pooled.';
  if (baselineKey(c.hardware) !== run.hardware)
    return `The calibration was measured on ${c.hardware}, not on ${run.hardware} as requested; nothing was pooled.`;
  const names = run.spec.kind === 'decode' ? run.spec.workloads.map((w) => w.name) : [];
  const missing = names.filter((n) => !c.workloads[n]);
  if (missing.length) return `The calibration has no pairs for ${missing.join(', ')}; nothing was pooled.`;
  const bad = names.filter((n) => c.workloads[n].ratios.some((x) => !Number.isFinite(x) || x <= 0));
  if (bad.length)
    return `The calibration's ratios for ${bad.join(', ')} are not all positive numbers; nothing was pooled.`;
  const few = names.filter((n) => c.workloads[n].ratios.length < CALIBRATION_MIN_PAIRS);
  if (few.length)
    return `The calibration measured fewer than ${CALIBRATION_MIN_PAIRS} pairs for ${few
      .map((n) => `${n} (${c.workloads[n].ratios.length})`)
      .join(', ')}; nothing was pooled. Give it a larger budgetSeconds.`;
  return null;
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
