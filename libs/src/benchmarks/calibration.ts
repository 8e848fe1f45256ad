import type { CalibrationK } from '../harness/spec';

/**
 * Pooling K (issue 29): the calibration runs of one (benchmark, rules version, hardware key), each
 * with its pairs' ratios per workload (baseline totalMs ÷ reference totalMs), become one K per
 * workload with its 95 % interval. Per workload w:
 * - K_w = the median of every pooled ratio;
 * - within: a seeded percentile bootstrap (BOOTSTRAP_RESAMPLES resamples of the pooled ratios) of
 *   that median; h_w = half the log width of its 2.5–97.5 % interval;
 * - between machines: with ≥ 2 runs, s_w = the sample standard deviation over runs of
 *   log(median of the run's ratios); H_w = hypot(h_w, 1.96 · s_w) (else H_w = h_w);
 *   low/high = K_w · exp(∓H_w).
 * `halfWidthPct` = 100 · (exp(mean_w H_w) − 1). Pure: the same runs and seed give the same K.
 */

export const CALIBRATION_BOOTSTRAP_RESAMPLES = 2000;
/** The seed the hub pools with, so a K read twice is the same K. */
export const CALIBRATION_BOOTSTRAP_SEED = 29;

export interface CalibrationContribution {
  runId: string;
  workloads: Record<string, { ratios: number[] }>;
}

export interface PooledWorkload {
  k: number;
  low: number;
  high: number;
  /** Pooled pairs. */
  pairs: number;
  /** Log half-widths: h (within, the bootstrap), s·1.96 (between machines), H (combined). */
  withinLog: number;
  betweenLog: number;
  logHalfWidth: number;
  /** 100 · (exp(H) − 1). */
  halfWidthPct: number;
}

export interface PooledCalibration {
  /** What the spec carries (DecodeSpec.calibration). */
  k: CalibrationK;
  workloads: Record<string, PooledWorkload>;
}

/** mulberry32: a small seeded PRNG, uniform in [0, 1). */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export function median(xs: ArrayLike<number>): number {
  const s = Float64Array.from(xs).sort();
  const n = s.length;
  if (n === 0) return NaN;
  const m = n >> 1;
  return n % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

/** The q-quantile (0..1) of sorted values, linear between order statistics (numpy's default). */
export function quantileSorted(sorted: ArrayLike<number>, q: number): number {
  const n = sorted.length;
  if (n === 1) return sorted[0];
  const pos = q * (n - 1);
  const lo = Math.floor(pos);
  const hi = Math.min(n - 1, lo + 1);
  return sorted[lo] + (pos - lo) * (sorted[hi] - sorted[lo]);
}

/**
 * Half the log width of the seeded percentile bootstrap's 95 % interval of the median of `xs`
 * (`resamples` resamples with replacement, each of xs.length draws).
 */
export function bootstrapMedianLogHalfWidth(xs: number[], random: () => number, resamples: number): number {
  const n = xs.length;
  if (n < 2) return 0;
  const medians = new Float64Array(resamples);
  const draw = new Float64Array(n);
  for (let b = 0; b < resamples; b++) {
    for (let i = 0; i < n; i++) draw[i] = xs[Math.floor(random() * n)];
    draw.sort();
    const m = n >> 1;
    medians[b] = n % 2 ? draw[m] : (draw[m - 1] + draw[m]) / 2;
  }
  medians.sort();
  const low = quantileSorted(medians, 0.025);
  const high = quantileSorted(medians, 0.975);
  return (Math.log(high) - Math.log(low)) / 2;
}

/** The sample standard deviation (n − 1); 0 for fewer than two values. */
export function sampleSd(xs: number[]): number {
  if (xs.length < 2) return 0;
  const mean = xs.reduce((a, x) => a + x, 0) / xs.length;
  return Math.sqrt(xs.reduce((a, x) => a + (x - mean) ** 2, 0) / (xs.length - 1));
}

/**
 * Pools the calibration runs of one hardware key. Workloads are pooled in name order, each from
 * the runs that measured it (runs of one rules version measure the same workloads). Ratios that
 * are not finite and positive are the caller's to refuse before storing; here they are skipped.
 */
export function poolCalibration(
  hardware: string,
  runs: CalibrationContribution[],
  opts: { seed?: number; resamples?: number } = {},
): PooledCalibration {
  const random = seededRandom(opts.seed ?? CALIBRATION_BOOTSTRAP_SEED);
  const resamples = opts.resamples ?? CALIBRATION_BOOTSTRAP_RESAMPLES;
  const names = [...new Set(runs.flatMap((r) => Object.keys(r.workloads)))].sort();
  const workloads: Record<string, PooledWorkload> = {};
  for (const name of names) {
    const perRun = runs
      .map((r) => (r.workloads[name]?.ratios ?? []).filter((x) => Number.isFinite(x) && x > 0))
      .filter((xs) => xs.length > 0);
    const pooled = perRun.flat();
    if (pooled.length === 0) continue;
    const k = median(pooled);
    const withinLog = bootstrapMedianLogHalfWidth(pooled, random, resamples);
    const betweenLog = perRun.length >= 2 ? 1.96 * sampleSd(perRun.map((xs) => Math.log(median(xs)))) : 0;
    const logHalfWidth = Math.hypot(withinLog, betweenLog);
    workloads[name] = {
      k,
      low: k * Math.exp(-logHalfWidth),
      high: k * Math.exp(logHalfWidth),
      pairs: pooled.length,
      withinLog,
      betweenLog,
      logHalfWidth,
      halfWidthPct: 100 * (Math.exp(logHalfWidth) - 1),
    };
  }
  const pooledNames = Object.keys(workloads);
  const meanLog = pooledNames.length
    ? pooledNames.reduce((a, n) => a + workloads[n].logHalfWidth, 0) / pooledNames.length
    : 0;
  return {
    k: {
      hardware,
      halfWidthPct: 100 * (Math.exp(meanLog) - 1),
      pairs: pooledNames.length ? Math.min(...pooledNames.map((n) => workloads[n].pairs)) : 0,
      runs: runs.length,
      workloads: Object.fromEntries(
        pooledNames.map((n) => [n, { k: workloads[n].k, low: workloads[n].low, high: workloads[n].high }]),
      ),
    },
    workloads,
  };
}
