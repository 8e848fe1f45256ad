import type { ScoreInterval } from '../harness/events';
import type { RunResultView } from './runs';

/**
 * Runs of one benchmark side by side (issue 33, "compare runs"): the same table for the CLI
 * (`dryft compare RUN RUN`) and the web (`/runs/compare?ids=…`), from the runs' results as
 * `GET /api/runs/:id/result` answers them, so reading them needs no right beyond reading each run.
 */
export const COMPARE_MIN_RUNS = 2;
export const COMPARE_MAX_RUNS = 6;

export interface ComparedRun {
  id: string;
  label: string;
  status: string;
  mode: string;
  score: number | null;
  interval: ScoreInterval | null;
}

/** One figure across the runs: null where a run has none (it failed first, or lacks the workload). */
export interface CompareRow {
  /** "short · TPOT ms", "accuracy" */
  label: string;
  /** Which way is better, for the marks: lower TPOT is better, higher speed-up is. */
  better: 'lower' | 'higher' | null;
  values: (number | null)[];
  /** Each value against the first run's, in percent (null where either is missing). */
  deltaPct: (number | null)[];
  /** Index of the best value where the row has a direction and two or more values. */
  best: number | null;
}

export interface RunComparison {
  benchmarkId: string;
  kind: 'decode' | 'training';
  runs: ComparedRun[];
  rows: CompareRow[];
  /** Training: each run's loss curve, for overlaying (metric "loss"; empty for decode). */
  curves: { runId: string; points: { step: number; value: number; elapsedMs: number }[] }[];
}

export class CompareError extends Error {
  constructor(
    readonly code: 'too_few_runs' | 'too_many_runs' | 'mixed_benchmarks' | 'duplicate_runs',
    message: string,
  ) {
    super(message);
  }
}

/** Checks the ids before anything is fetched (the CLI and the web say the same thing). */
export function checkCompareIds(ids: string[]): void {
  if (ids.length < COMPARE_MIN_RUNS)
    throw new CompareError(
      'too_few_runs',
      `Name at least ${COMPARE_MIN_RUNS} runs to compare (their Run IDs).`,
    );
  if (ids.length > COMPARE_MAX_RUNS)
    throw new CompareError(
      'too_many_runs',
      `At most ${COMPARE_MAX_RUNS} runs side by side; you named ${ids.length}. Compare fewer at a time.`,
    );
  const seen = new Set<string>();
  for (const id of ids) {
    if (seen.has(id))
      throw new CompareError('duplicate_runs', `Run ${id} is named twice; name each run once.`);
    seen.add(id);
  }
}

const delta = (value: number | null, first: number | null) =>
  value === null || first === null || first === 0 ? null : ((value - first) / first) * 100;

function row(label: string, better: CompareRow['better'], values: (number | null)[]): CompareRow {
  const present = values
    .map((v, i) => [v, i] as const)
    .filter((p): p is readonly [number, number] => p[0] !== null);
  let best: number | null = null;
  if (better && present.length >= 2) {
    best = present.reduce((a, b) => ((better === 'lower' ? b[0] < a[0] : b[0] > a[0]) ? b : a))[1];
  }
  return { label, better, values, deltaPct: values.map((v) => delta(v, values[0])), best };
}

/** The comparison of the results, in the order given (the first is the one the deltas are against). */
export function compareRuns(results: RunResultView[], labels?: string[]): RunComparison {
  checkCompareIds(results.map((r) => r.run.id));
  const benchmarks = [...new Set(results.map((r) => r.run.benchmarkId))];
  if (benchmarks.length > 1)
    throw new CompareError(
      'mixed_benchmarks',
      `Runs of different benchmarks cannot be compared (${benchmarks.join(', ')}); name runs of one benchmark.`,
    );
  const training = results.some((r) => (r.curve?.length ?? 0) > 0 || r.run.tier !== null);
  const runs: ComparedRun[] = results.map((r, i) => ({
    id: r.run.id,
    label: labels?.[i] ?? `${r.run.submissionName} · ${r.run.id.slice(0, 8)}`,
    status: r.run.status,
    mode: r.run.mode,
    score: r.score,
    interval: r.interval,
  }));
  const rows: CompareRow[] = [
    row(
      'score',
      'higher',
      results.map((r) => r.score),
    ),
  ];
  if (!training) {
    const workloads = [...new Set(results.flatMap((r) => r.workloads.map((w) => w.workload)))];
    for (const name of workloads) {
      const of = (r: RunResultView) => r.workloads.find((w) => w.workload === name) ?? null;
      rows.push(
        row(
          `${name} · TPOT ms`,
          'lower',
          results.map((r) => of(r)?.tpotMs ?? null),
        ),
      );
      rows.push(
        row(
          `${name} · TTFT ms`,
          'lower',
          results.map((r) => of(r)?.ttftMs ?? null),
        ),
      );
      rows.push(
        row(
          `${name} · speed-up`,
          'higher',
          results.map((r) => of(r)?.speedup ?? null),
        ),
      );
      rows.push(
        row(
          `${name} · spread %`,
          'lower',
          results.map((r) => of(r)?.ratioSpreadPct ?? of(r)?.spreadPct ?? null),
        ),
      );
    }
  }
  const metricNames = [...new Set(results.flatMap((r) => Object.keys(r.metrics)))].sort();
  for (const name of metricNames) {
    const better = /accuracy/i.test(name) ? 'higher' : /loss/i.test(name) ? 'lower' : null;
    rows.push(
      row(
        name,
        better,
        results.map((r) => r.metrics[name] ?? null),
      ),
    );
  }
  return {
    benchmarkId: benchmarks[0],
    kind: training ? 'training' : 'decode',
    runs,
    rows,
    curves: training
      ? results.map((r) => ({
          runId: r.run.id,
          points: (r.curve ?? [])
            .filter((p) => p.name === 'loss')
            .map(({ step, value, elapsedMs }) => ({ step, value, elapsedMs })),
        }))
      : [],
  };
}
