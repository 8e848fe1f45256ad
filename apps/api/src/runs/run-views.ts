import type { CheckView, MetricView, RunView, RunWaiting, SampleView } from '@dryft/libs';
import type { RunCheckEntity } from './run-check.entity';
import type { RunMetricEntity } from './run-metric.entity';
import type { RunSampleEntity } from './run-sample.entity';
import type { RunEntity } from './run.entity';

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
    quotaRefunded: r.quotaRefunded,
    waiting: r.status === 'queued' ? (extra.waiting ?? null) : null,
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
