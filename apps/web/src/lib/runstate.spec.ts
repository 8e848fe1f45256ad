import type { RunView, SampleView } from '@dryft/libs';
import { describe, expect, it } from 'vitest';
import { bestScoreSeries, metricNames, metricSeries, RunState, timingSeries } from './runstate';

const sample = (workload: string, index: number, ttftMs: number, warmup = false): SampleView => ({
  workload,
  index,
  warmup,
  ttftMs,
  tpotMs: ttftMs / 10,
  tps: 100,
  totalMs: ttftMs * 2,
  tokens: 32,
});

const run = (status: RunView['status'], revision = 0, deadlineAt: string | null = null): RunView => ({
  id: 'r1',
  submissionId: 's1',
  submissionName: 'x #1',
  benchmarkId: 'toy-decode',
  teamId: 't',
  createdBy: 'ada',
  mode: 'public',
  tier: null,
  dataset: null,
  status,
  failureCode: null,
  message: null,
  cancelReason: null,
  queuePosition: null,
  score: null,
  rulesVersion: 1,
  invalidated: false,
  invalidatedReason: null,
  agentName: null,
  createdAt: '',
  assignedAt: null,
  startedAt: null,
  finishedAt: null,
  deadlineAt,
  lastLogSeq: 0,
  revision,
  quotaRefunded: false,
  waiting: null,
});

describe('RunState', () => {
  it('dedupes samples delivered both live and by the result', () => {
    const s = new RunState();
    expect(s.addSample(sample('b1', 0, 5))).toBe(true);
    expect(s.addSample(sample('b1', 0, 5))).toBe(false);
    expect(s.addSample(sample('b1', 0, 9, true))).toBe(true);
    expect(s.samples).toHaveLength(2);
  });

  it('keeps the newest snapshot by revision whatever order they arrive in', () => {
    // A REST read from before the organizer's new limit, answered after its live status.
    const s = new RunState();
    expect(s.setRun(run('running', 3, '2026-12-02T01:05:00.000Z'))).toBe(true);
    expect(s.setRun(run('running', 5, '2026-12-02T01:02:00.000Z'))).toBe(true);
    expect(s.setRun(run('running', 4, '2026-12-02T01:05:00.000Z'))).toBe(false);
    expect(s.run?.deadlineAt).toBe('2026-12-02T01:02:00.000Z');
    // Equal revision: a view built from the row its builder just changed; it is taken.
    expect(s.setRun(run('succeeded', 5))).toBe(true);
    expect(s.run?.status).toBe('succeeded');
  });

  it('never goes back from a terminal status to an earlier one', () => {
    const s = new RunState();
    s.setRun(run('running'));
    s.setRun(run('succeeded'));
    expect(s.setRun(run('running'))).toBe(false);
    expect(s.run?.status).toBe('succeeded');
  });

  it('replaces a check by name and dedupes metric points', () => {
    const s = new RunState();
    s.addCheck({ name: 'output', passed: false, detail: 'pending' });
    s.addCheck({ name: 'output', passed: true, detail: 'ok' });
    expect(s.checks).toEqual([{ name: 'output', passed: true, detail: 'ok' }]);
    expect(s.addMetric({ name: 'loss', step: 1, value: 2, elapsedMs: 10 })).toBe(true);
    expect(s.addMetric({ name: 'loss', step: 1, value: 2, elapsedMs: 10 })).toBe(false);
  });

  it('restores the loss curve from the stored result and merges live points once each', () => {
    const s = new RunState();
    // A live point that arrived before the page loaded the result…
    expect(s.addMetric({ name: 'loss', step: 3, value: 1.2, elapsedMs: 30 })).toBe(true);
    s.setResult({
      run: run('running'),
      score: null,
      workloads: [],
      samples: [],
      checks: [],
      metrics: { loss: 1.2 },
      detail: null,
      complete: false,
      curve: [
        { name: 'loss', step: 1, value: 2.5, elapsedMs: 10 },
        { name: 'loss', step: 2, value: 1.8, elapsedMs: 20 },
        { name: 'loss', step: 3, value: 1.2, elapsedMs: 30 },
      ],
    });
    // …and ones replayed live after it: each (name, step) once.
    expect(s.addMetric({ name: 'loss', step: 2, value: 1.8, elapsedMs: 20 })).toBe(false);
    expect(s.addMetric({ name: 'loss', step: 4, value: 0.9, elapsedMs: 40 })).toBe(true);
    expect(metricSeries(s.metrics, 'loss')).toEqual([
      [1, 2, 3, 4],
      [2.5, 1.8, 1.2, 0.9],
    ]);
    // A result without a curve (decode runs) leaves the points alone.
    s.setResult({ ...s.result!, curve: undefined });
    expect(s.metrics).toHaveLength(4);
  });
});

describe('chart series', () => {
  it('puts each workload on its own series, by measured sample number, leaving out warm-ups', () => {
    const { workloads, data } = timingSeries(
      [sample('b1', 0, 99, true), sample('b1', 1, 10), sample('b4', 1, 20), sample('b1', 2, 11)],
      'ttftMs',
    );
    expect(workloads).toEqual(['b1', 'b4']);
    expect(data).toEqual([
      [1, 2],
      [10, 11],
      [20, null],
    ]);
  });

  it('orders metric points by step with the loss first', () => {
    const m = [
      { name: 'accuracy', step: 2, value: 0.5, elapsedMs: 1 },
      { name: 'loss', step: 2, value: 1.5, elapsedMs: 1 },
      { name: 'loss', step: 1, value: 2.5, elapsedMs: 1 },
    ];
    expect(metricNames(m)).toEqual(['loss', 'accuracy']);
    expect(metricSeries(m, 'loss')).toEqual([
      [1, 2],
      [2.5, 1.5],
    ]);
  });

  it('builds a best-score step series per benchmark', () => {
    const { benchmarks, data } = bestScoreSeries([
      { benchmarkId: 'a', score: 100, achievedAt: '2026-01-01T00:00:00Z' },
      { benchmarkId: 'b', score: 50, achievedAt: '2026-01-01T00:01:00Z' },
      { benchmarkId: 'a', score: 130, achievedAt: '2026-01-01T00:02:00Z' },
    ]);
    expect(benchmarks).toEqual(['a', 'b']);
    expect(data[1]).toEqual([100, 100, 130]);
    expect(data[2]).toEqual([null, 50, 50]);
  });

  it('carries the best to now', () => {
    const t = Date.parse('2026-01-01T00:00:00Z') / 1000;
    const { data } = bestScoreSeries(
      [{ benchmarkId: 'a', score: 90, achievedAt: '2026-01-01T00:00:00Z' }],
      t + 600,
    );
    expect(data).toEqual([
      [t, t + 600],
      [90, 90],
    ]);
  });
});
