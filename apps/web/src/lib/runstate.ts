import type { CheckView, MetricView, RunResultView, RunView, SampleView } from '@dryft/libs';
import { TERMINAL_STATUSES } from '@dryft/libs';

/**
 * Everything the run page shows apart from the log, merged from REST and live events in any order:
 * samples keyed by (workload, index, warmup), checks by name, metric points by (name, step).
 */
export class RunState {
  run: RunView | null = null;
  samples: SampleView[] = [];
  checks: CheckView[] = [];
  metrics: MetricView[] = [];
  result: RunResultView | null = null;
  version = 0;
  private sampleKeys = new Set<string>();
  private metricKeys = new Set<string>();

  setRun(run: RunView): boolean {
    // Ignore an older snapshot arriving after a newer one: a lower revision of the row is older
    // (equal may carry the change its builder made), and terminal states never go back.
    if (this.run && this.run.id === run.id) {
      if ((run.revision ?? 0) < (this.run.revision ?? 0)) return false;
      const wasTerminal = TERMINAL_STATUSES.includes(this.run.status);
      const isTerminal = TERMINAL_STATUSES.includes(run.status);
      if (wasTerminal && !isTerminal) return false;
    }
    this.run = run;
    this.version++;
    return true;
  }

  addSample(s: SampleView): boolean {
    const key = `${s.workload}\u0000${s.index}\u0000${s.warmup ? 1 : 0}`;
    if (this.sampleKeys.has(key)) return false;
    this.sampleKeys.add(key);
    this.samples.push(s);
    this.version++;
    return true;
  }

  addCheck(c: CheckView): void {
    const i = this.checks.findIndex((x) => x.name === c.name);
    if (i >= 0) this.checks[i] = c;
    else this.checks.push(c);
    this.version++;
  }

  addMetric(m: MetricView): boolean {
    const key = `${m.name}\u0000${m.step}`;
    if (this.metricKeys.has(key)) return false;
    this.metricKeys.add(key);
    this.metrics.push(m);
    this.version++;
    return true;
  }

  /** The stored result (on page load, at the end, on reconnect): its loss curve merges with live points. */
  setResult(r: RunResultView): void {
    this.result = r;
    this.setRun(r.run);
    for (const s of r.samples) this.addSample(s);
    for (const c of r.checks) this.addCheck(c);
    for (const m of r.curve ?? []) this.addMetric(m);
    this.version++;
  }

  get workloads(): string[] {
    return [...new Set(this.samples.map((s) => s.workload))];
  }
}

export type ChartData = [number[], ...(number | null)[][]];

/**
 * A chart of one timing field: x = measured sample number within its workload (1, 2, …),
 * one series per workload. Warm-up samples are left out (they are in the table).
 */
export function timingSeries(
  samples: readonly SampleView[],
  field: 'ttftMs' | 'tpotMs',
): { workloads: string[]; data: ChartData } {
  const measured = samples.filter((s) => !s.warmup && s[field] !== null);
  const workloads = [...new Set(measured.map((s) => s.workload))];
  const byWorkload = new Map<string, Map<number, number>>();
  for (const w of workloads) byWorkload.set(w, new Map());
  // Number each workload's measured samples by their index order.
  for (const w of workloads) {
    const mine = measured.filter((s) => s.workload === w).sort((a, b) => a.index - b.index);
    mine.forEach((s, i) => byWorkload.get(w)!.set(i + 1, s[field] as number));
  }
  const maxN = Math.max(0, ...[...byWorkload.values()].map((m) => m.size));
  const xs = Array.from({ length: maxN }, (_, i) => i + 1);
  const data: ChartData = [xs, ...workloads.map((w) => xs.map((x) => byWorkload.get(w)!.get(x) ?? null))];
  return { workloads, data };
}

/** Points of one metric (e.g. loss) by step. */
export function metricSeries(metrics: readonly MetricView[], name: string): ChartData {
  const mine = metrics.filter((m) => m.name === name).sort((a, b) => a.step - b.step);
  return [mine.map((m) => m.step), mine.map((m) => m.value)];
}

export function metricNames(metrics: readonly MetricView[]): string[] {
  const names = [...new Set(metrics.map((m) => m.name))];
  // The loss curve first.
  return names.sort((a, b) => Number(b.includes('loss')) - Number(a.includes('loss')) || a.localeCompare(b));
}

/** A step chart of a best score over time, one series per benchmark, x in epoch seconds. */
export function bestScoreSeries(
  history: readonly { benchmarkId: string; score: number; achievedAt: string }[],
  /** Epoch seconds: the best holds until now, so the step line runs to this point. */
  now?: number,
): { benchmarks: string[]; data: ChartData } {
  const benchmarks = [...new Set(history.map((h) => h.benchmarkId))];
  const points = history
    .map((h) => ({ ...h, t: Math.floor(Date.parse(h.achievedAt) / 1000) }))
    .sort((a, b) => a.t - b.t);
  const xs = [...new Set(points.map((p) => p.t))];
  if (now !== undefined && xs.length && now > xs[xs.length - 1]) xs.push(now);
  const series = benchmarks.map((b) => {
    let best: number | null = null;
    return xs.map((t) => {
      for (const p of points)
        if (p.t === t && p.benchmarkId === b) best = best === null ? p.score : Math.max(best, p.score);
      return best;
    });
  });
  return { benchmarks, data: [xs, ...series] };
}
