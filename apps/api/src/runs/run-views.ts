import { Injectable } from '@nestjs/common';
import type { CheckView, MetricView, RunResultView, RunView, RunWaiting, SampleView } from '@dryft/libs';
import { TERMINAL_STATUSES } from '@dryft/libs';
import type { RunCheckEntity } from './run-check.entity';
import type { RunMetricEntity } from './run-metric.entity';
import type { RunSampleEntity } from './run-sample.entity';
import type { RunEntity } from './run.entity';
import { RunsRepository } from './runs.repository';
import { WaitingService } from './waiting.service';

const iso = (d: Date | null) => (d ? d.toISOString() : null);

export function runView(
  r: RunEntity,
  extra: {
    submissionName: string;
    createdBy: string;
    queuePosition: number | null;
    waiting?: RunWaiting | null;
  },
): RunView {
  return {
    id: r.id,
    submissionId: r.submissionId,
    submissionName: extra.submissionName,
    benchmarkId: r.benchmarkId,
    teamId: r.teamId,
    createdBy: extra.createdBy,
    mode: r.mode,
    tier: r.tier,
    dataset: r.dataset,
    status: r.status,
    failureCode: r.failureCode,
    message: r.message,
    cancelReason: r.cancelReason,
    queuePosition: extra.queuePosition,
    score: r.score,
    rulesVersion: r.rulesVersion,
    invalidated: r.invalidated,
    invalidatedReason: r.invalidatedReason,
    disqualifiedAt: iso(r.disqualifiedAt),
    disqualifiedReason: r.disqualifiedReason,
    agentName: r.agentName,
    createdAt: r.createdAt.toISOString(),
    assignedAt: iso(r.assignedAt),
    startedAt: iso(r.startedAt),
    finishedAt: iso(r.finishedAt),
    deadlineAt: iso(r.deadlineAt),
    lastLogSeq: r.lastLogSeq,
    revision: r.revision ?? 0,
    runtime: r.runtime ?? null,
    runtimeMismatch: r.runtimeMismatch ?? [],
    quotaRefunded: r.quotaRefunded,
    waiting: r.status === 'queued' ? (extra.waiting ?? null) : null,
    rerunOf: r.rerunOf ?? null,
  };
}

export const sampleView = (s: RunSampleEntity): SampleView => ({
  workload: s.workload,
  index: s.index,
  warmup: s.warmup,
  ttftMs: s.ttftMs,
  tpotMs: s.tpotMs,
  tps: s.tps,
  totalMs: s.totalMs,
  tokens: s.tokens,
  ...(s.metrics ? { metrics: s.metrics } : {}),
});

export const checkView = (c: RunCheckEntity): CheckView => ({
  name: c.name,
  passed: c.passed,
  detail: c.detail,
});

export const metricView = (m: RunMetricEntity): MetricView => ({
  name: m.name,
  step: m.step,
  value: m.value,
  elapsedMs: m.elapsedMs,
});

/** What a run is called where it has no submission (a baseline re-measure, a calibration run). */
function submissionName(
  run: RunEntity,
  submission: { sourceName: string; number: number } | undefined,
): string {
  if (submission) return `${submission.sourceName} #${submission.number}`;
  if (run.mode === 'baseline') return `baseline re-measure (${run.hardware})`;
  if (run.mode === 'calibration')
    return `calibration of K (${run.hardware}, part ${run.calibrationPart ?? 1})`;
  return 'unknown';
}

/**
 * How runs are shown: the view of a run (REST, live, webhooks, the organizer's console) and its
 * result. A page of runs costs the same few queries however long it is ({@link views}): the names
 * of submissions and creators, the queue places, and the waiting estimate's reads.
 */
@Injectable()
export class RunViews {
  constructor(
    private readonly runs: RunsRepository,
    private readonly waiting: WaitingService,
  ) {}

  /** The view of one run as the caller holds it (not read again). */
  async view(run: RunEntity): Promise<RunView> {
    return (await this.views([run]))[0];
  }

  /** For the live layer and webhooks: the view of a run by id, no authorization (callers check membership). */
  async viewById(runId: string): Promise<RunView | null> {
    const run = await this.runs.findById(runId);
    return run ? this.view(run) : null;
  }

  /**
   * The views of runs, in their order, in a fixed number of queries (at most five, whatever the
   * number of runs): one for submission names and creator logins, one for the queued runs' places,
   * and the waiting estimate's three when any is queued.
   */
  async views(runs: RunEntity[]): Promise<RunView[]> {
    if (runs.length === 0) return [];
    const submissionIds = [...new Set(runs.flatMap((r) => (r.submissionId ? [r.submissionId] : [])))];
    const userIds = [...new Set(runs.map((r) => r.createdBy))];
    const [names, positions] = await Promise.all([
      this.runs.viewNames(submissionIds, userIds),
      this.runs.queuePositions(runs),
    ]);
    const positionOf = (r: RunEntity) => positions.get(r.id) ?? null;
    const queued = runs.filter((r) => positionOf(r) !== null);
    const estimates = await this.waiting.forRuns(queued.map((run) => ({ run, position: positionOf(run)! })));
    const waiting = new Map(queued.map((r, i) => [r, estimates[i]]));
    return runs.map((run) =>
      runView(run, {
        submissionName: submissionName(
          run,
          run.submissionId ? names.submissions.get(run.submissionId) : undefined,
        ),
        createdBy: names.logins.get(run.createdBy) ?? 'unknown',
        queuePosition: positionOf(run),
        waiting: waiting.get(run) ?? null,
      }),
    );
  }

  /** A run's result: its view, samples, checks and metrics (the curve, and the last value of each). */
  async resultOf(run: RunEntity): Promise<RunResultView> {
    const [view, samples, checks, metrics] = await Promise.all([
      this.view(run),
      this.runs.samples(run.id),
      this.runs.checks(run.id),
      this.runs.metrics(run.id),
    ]);
    const lastMetrics: Record<string, number> = { ...(run.metrics ?? {}) };
    if (!run.metrics) for (const m of metrics) lastMetrics[m.name] = m.value;
    return {
      run: view,
      score: run.score,
      interval: run.score === null ? null : run.scoreInterval,
      absoluteInterval: run.score === null ? null : run.absoluteInterval,
      scoring: run.scoring,
      pairs: run.pairs,
      indicative: run.mode === 'public' && run.spec.kind === 'decode',
      workloads: run.workloads ?? [],
      samples: samples.map(sampleView),
      checks: checks.map(checkView),
      metrics: lastMetrics,
      detail: run.detail,
      complete: TERMINAL_STATUSES.includes(run.status),
      ...(metrics.length ? { curve: metrics.map(metricView) } : {}),
    };
  }
}
