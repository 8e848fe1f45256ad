import { Injectable } from '@nestjs/common';
import type {
  BaselineRemeasureBody,
  BaselineRemeasureView,
  BaselinesView,
  CalibrationView,
  RunView,
} from '@dryft/libs';
import {
  CALIBRATION_MAX_BUDGET_SECONDS,
  CALIBRATION_MAX_PARTS,
  CALIBRATION_MAX_TARGET_PCT,
  CALIBRATION_MIN_BUDGET_SECONDS,
  CALIBRATION_MIN_TARGET_PCT,
  REMEASURE_MIN_SAMPLES,
  agentFits,
  baselineKey,
  median,
} from '@dryft/libs';
import { AuditService } from '../audit/audit.service';
import { BenchmarkRegistry } from '../benchmarks/benchmark-registry';
import { BenchmarksService, EffectiveBenchmark } from '../benchmarks/benchmarks.service';
import { Clock } from '../common/clock';
import { badRequest, conflict, unprocessable } from '../common/errors';
import { EventBus } from '../common/event-bus';
import type { Principal } from '../common/principal';
import { UsersService } from '../users/users.service';
import { decodeSpec, utcDay } from './run-options';
import type { CalibrationRunEntity } from './calibration-run.entity';
import type { CalibrationEntity } from './calibration.entity';
import type { RunEntity } from './run.entity';
import { RunsRepository } from './runs.repository';
import { RunViews } from './run-views';

/** The partial unique index that admits one unfinished re-measure per benchmark and hardware key. */
const ONE_REMEASURE_INDEX = 'IDX_runs_one_remeasure';
/** The partial unique index that admits one unfinished calibration run per part, benchmark and key. */
const ONE_CALIBRATION_PART_INDEX = 'IDX_runs_one_calibration_part';

/**
 * An organizer's baseline re-measure: a run of mode `baseline` (no submission, no team, no score,
 * never on a board) that times the trusted baseline engine alone on one hardware key and, when it
 * succeeds, replaces the cached baseline of that key (RunLifecycleService.finish). Official paired
 * runs are the cache's only other writer. Or a calibration of K (mode `calibration`): runs that
 * pair the baseline with the reference engine on one key, whose pairs are pooled into that key's
 * K when each succeeds (RunLifecycleService.finish, poolCalibration).
 */
@Injectable()
export class BaselineRemeasureService {
  constructor(
    private readonly runs: RunsRepository,
    private readonly views: RunViews,
    private readonly benchmarks: BenchmarksService,
    private readonly registry: BenchmarkRegistry,
    private readonly users: UsersService,
    private readonly audit: AuditService,
    private readonly clock: Clock,
    private readonly bus: EventBus,
  ) {}

  /**
   * Queues a baseline re-measure (mode `baseline`, one run) or a calibration of K (mode
   * `calibration`, `parts` runs); returns the runs queued.
   */
  async queue(principal: Principal, benchmarkId: string, body: BaselineRemeasureBody): Promise<RunView[]> {
    const b = await this.benchmarks.get(benchmarkId);
    const calibrating = body.mode === 'calibration';
    if (b.kind !== 'decode')
      throw badRequest(
        'no_baseline',
        calibrating
          ? `${b.id} is a ${b.kind} benchmark: it has no baseline or reference engine to calibrate.`
          : `${b.id} is a ${b.kind} benchmark: its score is not measured against a baseline engine.`,
      );
    if (calibrating) return this.queueCalibration(principal, b, body);
    const extra = (['budgetSeconds', 'targetHalfWidthPct', 'parts'] as const).filter(
      (k) => body[k] !== undefined,
    );
    if (extra.length)
      throw badRequest(
        'calibration_fields_not_allowed',
        `${extra.join(', ')} apply to a calibration: send "mode": "calibration", or leave them out of a baseline re-measure.`,
      );
    const hardware = await this.hardwareFor(b.id, body.hardware);
    const pending = await this.runs.pendingRemeasure(b.id, hardware);
    if (pending) throw this.alreadyQueued(b.id, hardware, pending.id);
    const samples = body.samples ?? REMEASURE_MIN_SAMPLES;
    const now = this.clock.now();
    let run: RunEntity;
    try {
      run = await this.runs.insert({
        submissionId: null,
        teamId: null,
        benchmarkId: b.id,
        createdBy: principal.user.id,
        mode: 'baseline',
        hardware,
        tier: null,
        dataset: null,
        status: 'queued',
        rulesVersion: b.rulesVersion,
        runTimeLimitSeconds: b.runTimeLimitSeconds,
        spec: decodeSpec(b, 'baseline', { samples }),
        quotaBucket: 'baseline',
        quotaDay: utcDay(now).day,
        quotaHolder: principal.user.id,
      });
    } catch (err) {
      // Two organizers at once: the partial unique index lets one through.
      if ((err as { constraint?: string }).constraint === ONE_REMEASURE_INDEX) {
        const other = await this.runs.pendingRemeasure(b.id, hardware);
        throw this.alreadyQueued(b.id, hardware, other?.id ?? null);
      }
      throw err;
    }
    await this.audit.record(principal, {
      action: 'baseline.remeasure',
      target: { kind: 'benchmark', id: b.id },
      benchmarkId: b.id,
      reason: body.reason,
      details: { hardware, samples, runId: run.id, rulesVersion: b.rulesVersion },
    });
    return [await this.announce(run)];
  }

  /**
   * A calibration of K on one hardware key: `parts` runs of mode `calibration` (no submission),
   * each pairing the trusted baseline with the trusted reference for at most `budgetSeconds` of
   * GPU time; any agent of the key may take any part. Each part that succeeds adds its pairs to
   * the key's pool, so a later calibration resumes where the earlier ones stopped.
   */
  private async queueCalibration(
    principal: Principal,
    b: Extract<EffectiveBenchmark, { kind: 'decode' }>,
    body: BaselineRemeasureBody,
  ): Promise<RunView[]> {
    if (!b.referenceEngine)
      throw unprocessable(
        'no_reference',
        `${b.id} has no referenceEngine in its definition: official runs pair with the baseline, and there is no K to calibrate. Add "referenceEngine" to its benchmark file first.`,
      );
    if (body.samples !== undefined)
      throw badRequest(
        'samples_not_allowed',
        '"samples" applies to a baseline re-measure; a calibration adds pairs until "targetHalfWidthPct" or "budgetSeconds" is reached.',
      );
    const budget = body.budgetSeconds ?? b.calibration.budgetSeconds;
    if (!(budget >= CALIBRATION_MIN_BUDGET_SECONDS && budget <= CALIBRATION_MAX_BUDGET_SECONDS))
      throw badRequest(
        'budget_out_of_range',
        `budgetSeconds must be between ${CALIBRATION_MIN_BUDGET_SECONDS} and ${CALIBRATION_MAX_BUDGET_SECONDS} (GPU seconds per part); got ${body.budgetSeconds}.`,
      );
    const target = body.targetHalfWidthPct ?? b.calibration.targetHalfWidthPct;
    if (!(target >= CALIBRATION_MIN_TARGET_PCT && target <= CALIBRATION_MAX_TARGET_PCT))
      throw badRequest(
        'target_out_of_range',
        `targetHalfWidthPct must be between ${CALIBRATION_MIN_TARGET_PCT} and ${CALIBRATION_MAX_TARGET_PCT} (percent); got ${body.targetHalfWidthPct}.`,
      );
    const parts = body.parts ?? 1;
    if (!(Number.isInteger(parts) && parts >= 1 && parts <= CALIBRATION_MAX_PARTS))
      throw badRequest(
        'parts_out_of_range',
        `parts must be a whole number from 1 to ${CALIBRATION_MAX_PARTS} (runs to spread over agents of the key); got ${body.parts}.`,
      );
    const hardware = await this.hardwareFor(b.id, body.hardware);
    const pending = await this.runs.pendingCalibrations(b.id, hardware);
    if (pending.length)
      throw this.calibrationQueued(
        b.id,
        hardware,
        pending.map((r) => r.id),
      );
    const calibrate = { targetHalfWidthPct: target, maxPairs: b.calibration.maxPairs, budgetSeconds: budget };
    const spec = decodeSpec(b, 'calibration', { calibrate });
    // The budget is for the pairs: both engines' loads and warm-ups come on top, and the whole-run
    // limit allows for them (the benchmark's own limit is sized for one official run).
    const overhead =
      2 * b.limits.loadSeconds + 2 * (b.samples.warmup + 1) * b.limits.sampleSeconds * spec.workloads.length;
    const runSeconds = Math.ceil(budget + overhead);
    spec.limits = { ...spec.limits, runSeconds };
    const limit = Math.max(b.runTimeLimitSeconds, runSeconds + 60);
    const now = this.clock.now();
    let runs: RunEntity[];
    try {
      runs = await this.runs.transaction(async (tx) => {
        const out: RunEntity[] = [];
        for (let part = 1; part <= parts; part++)
          out.push(
            await tx.insert({
              submissionId: null,
              teamId: null,
              benchmarkId: b.id,
              createdBy: principal.user.id,
              mode: 'calibration',
              hardware,
              calibrationPart: part,
              tier: null,
              dataset: null,
              status: 'queued',
              rulesVersion: b.rulesVersion,
              runTimeLimitSeconds: limit,
              spec,
              quotaBucket: 'calibration',
              quotaDay: utcDay(now).day,
              quotaHolder: principal.user.id,
            }),
          );
        return out;
      });
    } catch (err) {
      if ((err as { constraint?: string }).constraint === ONE_CALIBRATION_PART_INDEX) {
        const other = await this.runs.pendingCalibrations(b.id, hardware);
        throw this.calibrationQueued(
          b.id,
          hardware,
          other.map((r) => r.id),
        );
      }
      throw err;
    }
    await this.audit.record(principal, {
      action: 'baseline.calibrate',
      target: { kind: 'benchmark', id: b.id },
      benchmarkId: b.id,
      reason: body.reason,
      details: {
        hardware,
        parts,
        ...calibrate,
        runIds: runs.map((r) => r.id),
        rulesVersion: b.rulesVersion,
      },
    });
    const views: RunView[] = [];
    for (const run of runs) views.push(await this.announce(run));
    return views;
  }

  private async announce(run: RunEntity): Promise<RunView> {
    const view = await this.views.view(run);
    this.bus.emit('run.queued', { runId: run.id, benchmarkId: run.benchmarkId });
    this.bus.emit('run.status', { run: view });
    return view;
  }

  /**
   * The cached baselines of a benchmark, its pooled K's (with their history) and its latest
   * re-measures and calibration runs (any status), newest first.
   */
  async list(benchmarkId: string): Promise<BaselinesView> {
    const b = await this.benchmarks.get(benchmarkId);
    const [cached, runs, pooled, contributions] = await Promise.all([
      this.runs.listBaselines(b.id),
      this.runs.listRemeasures(b.id, 20),
      this.runs.listCalibrations(b.id),
      this.runs.listCalibrationRuns(b.id),
    ]);
    const logins = new Map<string, string>();
    for (const id of new Set(runs.map((r) => r.createdBy)))
      logins.set(id, (await this.users.findById(id))?.login ?? 'unknown');
    return {
      benchmarkId: b.id,
      rulesVersion: b.rulesVersion,
      cached: cached.map((c) => ({
        hardware: c.hardware,
        rulesVersion: c.rulesVersion,
        measuredAt: c.measuredAt.toISOString(),
        workloads: c.figures.workloads,
      })),
      referenceEngine: b.kind === 'decode' ? b.referenceEngine : null,
      calibrationDefaults: b.kind === 'decode' ? { ...b.calibration } : null,
      calibrations: pooled.map((c) =>
        calibrationView(
          c,
          contributions.filter((r) => r.hardware === c.hardware && r.rulesVersion === c.rulesVersion),
        ),
      ),
      remeasures: runs.map((r) => remeasureView(r, logins.get(r.createdBy) ?? 'unknown')),
    };
  }

  /** DELETE …/baselines: forgets cached baselines and pooled K's (one key, or all), with audit. */
  async forget(
    principal: Principal,
    benchmarkId: string,
    hardware: string | undefined,
    reason: string | undefined,
  ): Promise<{ deleted: number; calibrations: number }> {
    await this.benchmarks.get(benchmarkId);
    const key = hardware === undefined ? undefined : baselineKey(hardware);
    const { deleted, calibrations } = await this.runs.transaction(async (tx) => ({
      deleted: await tx.deleteBaselines(benchmarkId, key),
      calibrations: await tx.deleteCalibrations(benchmarkId, key),
    }));
    await this.audit.record(principal, {
      action: 'baseline.remeasure',
      target: { kind: 'benchmark', id: benchmarkId },
      benchmarkId,
      reason: reason?.trim() || null,
      details: { hardware: key ?? null, deleted, calibrationsDeleted: calibrations },
    });
    if (calibrations) this.bus.emit('benchmark.calibrated', { benchmarkId });
    return { deleted, calibrations };
  }

  /**
   * The hardware key to measure on: the one asked for, which an agent that can run the benchmark
   * must have reported; or, left out, the only key such agents have.
   */
  private async hardwareFor(benchmarkId: string, asked: string | undefined): Promise<string> {
    const def = this.registry.get(benchmarkId)!;
    const keys = new Set<string>();
    for (const a of await this.runs.agentsForCapacity())
      if (a.capabilities && agentFits(def, a.capabilities))
        keys.add(baselineKey(a.capabilities.gpuModel ?? 'cpu'));
    const known = [...keys].sort();
    const list = known.length ? known.map((k) => `"${k}"`).join(', ') : 'none';
    if (asked !== undefined) {
      const key = baselineKey(asked);
      if (!keys.has(key))
        throw unprocessable(
          'unknown_hardware',
          `No agent that can run ${benchmarkId} has hardware "${key}", so nothing could measure it. Hardware of those agents: ${list}.`,
          { known },
        );
      return key;
    }
    if (known.length === 1) return known[0];
    if (known.length === 0)
      throw unprocessable(
        'unknown_hardware',
        `No agent that can run ${benchmarkId} is registered, so no hardware can be re-measured yet.`,
        { known },
      );
    throw badRequest(
      'hardware_required',
      `Agents of ${known.length} kinds of hardware can run ${benchmarkId}: pass "hardware", one of ${list}.`,
      { known },
    );
  }

  private calibrationQueued(benchmarkId: string, hardware: string, runIds: string[]) {
    return conflict(
      'calibration_pending',
      `A calibration of ${benchmarkId} on "${hardware}" is already queued or running (${runIds.length ? `runs ${runIds.join(', ')}` : 'its runs'}); wait for it to end, then start another: its pairs join the same pool. Or cancel its runs (POST /api/runs/:id/cancel).`,
      { runIds },
    );
  }

  private alreadyQueued(benchmarkId: string, hardware: string, runId: string | null) {
    return conflict(
      'remeasure_pending',
      `A baseline re-measure of ${benchmarkId} on "${hardware}" is already queued or running${runId ? ` (run ${runId})` : ''}; wait for it, or cancel it (POST /api/runs/:id/cancel).`,
      { runId },
    );
  }
}

export function remeasureView(r: RunEntity, requestedBy: string): BaselineRemeasureView {
  const calibration = r.mode === 'calibration';
  return {
    runId: r.id,
    mode: calibration ? 'calibration' : 'baseline',
    hardware: r.hardware ?? 'unknown',
    samples: r.spec.kind === 'decode' && !calibration ? r.spec.samplesPerWorkload : 0,
    part: r.calibrationPart,
    calibrate: r.spec.kind === 'decode' ? (r.spec.calibrate ?? null) : null,
    rulesVersion: r.rulesVersion,
    status: r.status,
    failureCode: r.failureCode,
    message: r.message,
    agentName: r.agentName,
    requestedBy,
    createdAt: r.createdAt.toISOString(),
    finishedAt: r.finishedAt ? r.finishedAt.toISOString() : null,
  };
}

/** A pooled K as the console shows it, with the runs it was pooled from (newest first). */
export function calibrationView(c: CalibrationEntity, runs: CalibrationRunEntity[]): CalibrationView {
  return {
    hardware: c.hardware,
    rulesVersion: c.rulesVersion,
    halfWidthPct: c.k.halfWidthPct,
    pairs: c.k.pairs,
    runs: c.k.runs,
    gpuMinutes: c.seconds / 60,
    workloads: Object.fromEntries(
      Object.entries(c.k.workloads).map(([name, w]) => [
        name,
        {
          ...w,
          halfWidthPct: c.detail[name]?.halfWidthPct ?? 0,
          pairs: c.detail[name]?.pairs ?? 0,
        },
      ]),
    ),
    history: runs.map((r) => ({
      runId: r.runId,
      agentName: r.agentName,
      pairs: r.pairs,
      seconds: r.seconds,
      halfWidthPct: r.halfWidthPct,
      workloads: Object.fromEntries(
        Object.entries(r.workloads).map(([name, w]) => [
          name,
          { k: median(w.ratios), pairs: w.ratios.length },
        ]),
      ),
      createdAt: r.createdAt.toISOString(),
    })),
    updatedAt: c.updatedAt.toISOString(),
  };
}
