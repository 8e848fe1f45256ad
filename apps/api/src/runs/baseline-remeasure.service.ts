import { Injectable } from '@nestjs/common';
import type { BaselineRemeasureBody, BaselineRemeasureView, BaselinesView, RunView } from '@dryft/libs';
import { agentFits, baselineKey } from '@dryft/libs';
import { AuditService } from '../audit/audit.service';
import { BenchmarkRegistry } from '../benchmarks/benchmark-registry';
import { BenchmarksService } from '../benchmarks/benchmarks.service';
import { Clock } from '../common/clock';
import { badRequest, conflict, unprocessable } from '../common/errors';
import { EventBus } from '../common/event-bus';
import type { Principal } from '../common/principal';
import { UsersService } from '../users/users.service';
import { decodeSpec, utcDay } from './run-options';
import type { RunEntity } from './run.entity';
import { RunsRepository } from './runs.repository';
import { RunsService } from './runs.service';

/** The partial unique index that admits one unfinished re-measure per benchmark and hardware key. */
const ONE_REMEASURE_INDEX = 'IDX_runs_one_remeasure';

/**
 * An organizer's baseline re-measure: a run of mode `baseline` (no submission, no team, no score,
 * never on a board) that times the trusted baseline engine alone on one hardware key and, when it
 * succeeds, replaces the cached baseline of that key (RunLifecycleService.finish). Official paired
 * runs are the cache's only other writer.
 */
@Injectable()
export class BaselineRemeasureService {
  constructor(
    private readonly runs: RunsRepository,
    private readonly runsService: RunsService,
    private readonly benchmarks: BenchmarksService,
    private readonly registry: BenchmarkRegistry,
    private readonly users: UsersService,
    private readonly audit: AuditService,
    private readonly clock: Clock,
    private readonly bus: EventBus,
  ) {}

  async queue(principal: Principal, benchmarkId: string, body: BaselineRemeasureBody): Promise<RunView> {
    const b = await this.benchmarks.get(benchmarkId);
    if (b.kind !== 'decode')
      throw badRequest(
        'no_baseline',
        `${b.id} is a ${b.kind} benchmark: its score is not measured against a baseline engine.`,
      );
    const hardware = await this.hardwareFor(b.id, body.hardware);
    const pending = await this.runs.pendingRemeasure(b.id, hardware);
    if (pending) throw this.alreadyQueued(b.id, hardware, pending.id);
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
        spec: decodeSpec(b, 'baseline', body.samples),
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
      details: { hardware, samples: body.samples, runId: run.id, rulesVersion: b.rulesVersion },
    });
    const view = await this.runsService.view(run);
    this.bus.emit('run.queued', { runId: run.id, benchmarkId: b.id });
    this.bus.emit('run.status', { run: view });
    return view;
  }

  /** The cached baselines of a benchmark and its latest re-measures (any status), newest first. */
  async list(benchmarkId: string): Promise<BaselinesView> {
    const b = await this.benchmarks.get(benchmarkId);
    const [cached, runs] = await Promise.all([
      this.runs.listBaselines(b.id),
      this.runs.listRemeasures(b.id, 20),
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
      remeasures: runs.map((r) => remeasureView(r, logins.get(r.createdBy) ?? 'unknown')),
    };
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

  private alreadyQueued(benchmarkId: string, hardware: string, runId: string | null) {
    return conflict(
      'remeasure_pending',
      `A baseline re-measure of ${benchmarkId} on "${hardware}" is already queued or running${runId ? ` (run ${runId})` : ''}; wait for it, or cancel it (POST /api/runs/:id/cancel).`,
      { runId },
    );
  }
}

export function remeasureView(r: RunEntity, requestedBy: string): BaselineRemeasureView {
  return {
    runId: r.id,
    hardware: r.hardware ?? 'unknown',
    samples: r.spec.kind === 'decode' ? r.spec.samplesPerWorkload : 0,
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
