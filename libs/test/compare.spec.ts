import { describe, expect, it } from 'vitest';
import { CompareError, compareRuns, checkCompareIds } from '../src';
import { resultView, workloadSummary } from './fixtures';

const A = 'aaaaaaaa-0000-4000-8000-000000000001';
const B = 'bbbbbbbb-0000-4000-8000-000000000002';
const C = 'cccccccc-0000-4000-8000-000000000003';

describe('compareRuns: runs of one benchmark side by side', () => {
  it('lines decode runs up per workload, with deltas against the first and the best marked', () => {
    const first = resultView({
      run: { id: A, submissionName: 'slow #1' },
      score: 100,
      workloads: [workloadSummary({ workload: 'short', tpotMs: 2, ttftMs: 20, speedup: 1 })],
    });
    const second = resultView({
      run: { id: B, submissionName: 'fast #2', mode: 'official' },
      score: 150,
      interval: { low: 147, high: 153, halfWidth: 3, level: 0.95 },
      workloads: [
        workloadSummary({ workload: 'short', tpotMs: 1, ttftMs: 25, speedup: 2, ratioSpreadPct: 0.5 }),
        workloadSummary({ workload: 'long', tpotMs: 3 }),
      ],
    });
    const c = compareRuns([first, second]);
    expect(c.kind).toBe('decode');
    expect(c.runs.map((r) => [r.label, r.mode, r.score])).toEqual([
      ['slow #1 · aaaaaaaa', 'public', 100],
      ['fast #2 · bbbbbbbb', 'official', 150],
    ]);
    expect(c.runs[1].interval?.halfWidth).toBe(3);
    const byLabel = Object.fromEntries(c.rows.map((r) => [r.label, r]));
    expect(byLabel['score']).toMatchObject({ values: [100, 150], deltaPct: [0, 50], best: 1 });
    expect(byLabel['short · TPOT ms']).toMatchObject({
      values: [2, 1],
      deltaPct: [0, -50],
      best: 1,
      better: 'lower',
    });
    expect(byLabel['short · TTFT ms']).toMatchObject({ values: [20, 25], best: 0 });
    expect(byLabel['short · speed-up']).toMatchObject({ values: [1, 2], best: 1 });
    expect(byLabel['short · spread %'].values).toEqual([2, 0.5]); // paired runs: the ratio spread
    // a workload one run lacks: null there, no delta, no best of one value
    expect(byLabel['long · TPOT ms']).toMatchObject({
      values: [null, 3],
      deltaPct: [null, null],
      best: null,
    });
  });

  it('compares training runs by their metrics and overlays their loss curves', () => {
    const curve = (scale: number) =>
      [0, 1, 2].map((i) => ({ name: 'loss', step: i * 10, value: scale / (i + 1), elapsedMs: i * 100 }));
    const c = compareRuns([
      resultView({
        run: { id: A, benchmarkId: 'deep-recurrence', tier: 'easy' },
        score: 60,
        metrics: { accuracy: 60, loss: 0.9 },
        curve: [...curve(2), { name: 'lr', step: 0, value: 1, elapsedMs: 0 }],
      }),
      resultView({
        run: { id: B, benchmarkId: 'deep-recurrence', tier: 'easy' },
        score: 80,
        metrics: { accuracy: 80, loss: 0.4, updates: 10 },
        curve: curve(1),
      }),
    ]);
    expect(c.kind).toBe('training');
    expect(c.rows.map((r) => r.label)).toEqual(['score', 'accuracy', 'loss', 'updates']);
    expect(c.rows.find((r) => r.label === 'loss')).toMatchObject({ better: 'lower', best: 1 });
    expect(c.rows.find((r) => r.label === 'updates')).toMatchObject({
      values: [null, 10],
      better: null,
      best: null,
    });
    expect(c.curves.map((k) => [k.runId, k.points.map((p) => p.value)])).toEqual([
      [A, [2, 1, 2 / 3]],
      [B, [1, 0.5, 1 / 3]],
    ]);
  });

  it('refuses what cannot be compared, saying what to change', () => {
    const one = resultView({ run: { id: A } });
    const other = resultView({ run: { id: B, benchmarkId: 'qwen3-4b-decode' } });
    const fail = (f: () => unknown) => {
      try {
        f();
      } catch (err) {
        expect(err).toBeInstanceOf(CompareError);
        return [(err as CompareError).code, (err as Error).message];
      }
      throw new Error('expected a refusal');
    };
    expect(fail(() => compareRuns([one]))).toEqual([
      'too_few_runs',
      'Name at least 2 runs to compare (their Run IDs).',
    ]);
    expect(fail(() => compareRuns([one, other]))[0]).toBe('mixed_benchmarks');
    expect(fail(() => compareRuns([one, other]))[1]).toContain('toy-decode, qwen3-4b-decode');
    expect(fail(() => checkCompareIds([A, B, A]))).toEqual([
      'duplicate_runs',
      `Run ${A} is named twice; name each run once.`,
    ]);
    expect(fail(() => checkCompareIds([A, B, C, A + 1, B + 1, C + 1, 'x']))[0]).toBe('too_many_runs');
  });
});
