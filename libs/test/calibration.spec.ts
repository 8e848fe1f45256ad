import { describe, expect, it } from 'vitest';
import {
  CALIBRATION_BOOTSTRAP_RESAMPLES,
  CALIBRATION_BOOTSTRAP_SEED,
  bootstrapMedianLogHalfWidth,
  median,
  poolCalibration,
  quantileSorted,
  sampleSd,
  seededRandom,
} from '../src/benchmarks/calibration';

// Two calibration runs of one hardware key: lognormal ratios drawn once with seededRandom(7).
const A = {
  runId: 'a',
  workloads: {
    short: {
      ratios: [2.5107, 2.436, 2.4257, 2.5053, 2.488, 2.5325, 2.3765, 2.4667, 2.4397, 2.5631, 2.541, 2.5304],
    },
    long: {
      ratios: [3.0909, 3.1058, 3.1209, 3.0437, 3.1928, 3.1773, 3.2147, 3.0761, 3.1654, 3.103, 3.0472, 3.1665],
    },
  },
};
const B = {
  runId: 'b',
  workloads: {
    short: { ratios: [2.5151, 2.5177, 2.5883, 2.4865, 2.5266, 2.6279, 2.6648, 2.6052, 2.6601, 2.5226] },
    long: { ratios: [3.1192, 3.1325, 3.1309, 2.9014, 3.1647, 3.0156, 2.9582, 3.153, 3.0848, 3.0098] },
  },
};

/** The bootstrap written out again, draw by draw, to check the library's against. */
function referenceWithin(
  xs: number[],
  seed: number,
  resamples: number,
  draws: () => number = seededRandom(seed),
) {
  const meds: number[] = [];
  for (let b = 0; b < resamples; b++) {
    const d: number[] = [];
    for (let i = 0; i < xs.length; i++) d.push(xs[Math.floor(draws() * xs.length)]);
    d.sort((p, q) => p - q);
    meds.push(d.length % 2 ? d[(d.length - 1) / 2] : (d[d.length / 2 - 1] + d[d.length / 2]) / 2);
  }
  meds.sort((p, q) => p - q);
  const q = (p: number) => {
    const pos = p * (meds.length - 1);
    const lo = Math.floor(pos);
    return meds[lo] + (pos - lo) * (meds[Math.min(lo + 1, meds.length - 1)] - meds[lo]);
  };
  return (Math.log(q(0.975)) - Math.log(q(0.025))) / 2;
}

describe('poolCalibration (issue 29, "Pooling K")', () => {
  it('pools two runs exactly: median K, bootstrap within, between-run spread, combined in quadrature', () => {
    const p = poolCalibration('NVIDIA H200', [A, B]);
    // K_w: the median of the 22 pooled ratios.
    expect(p.workloads.short.k).toBe(median([...A.workloads.short.ratios, ...B.workloads.short.ratios]));
    expect(p.workloads.short.k).toBeCloseTo(2.52015, 12);
    expect(p.workloads.long.k).toBeCloseTo(3.1125, 12);
    // Within: the seeded bootstrap, workloads in name order from one stream ("long" first).
    const draws = seededRandom(CALIBRATION_BOOTSTRAP_SEED);
    const pooledLong = [...A.workloads.long.ratios, ...B.workloads.long.ratios];
    const pooledShort = [...A.workloads.short.ratios, ...B.workloads.short.ratios];
    expect(p.workloads.long.withinLog).toBe(
      referenceWithin(pooledLong, 0, CALIBRATION_BOOTSTRAP_RESAMPLES, draws),
    );
    expect(p.workloads.short.withinLog).toBe(
      referenceWithin(pooledShort, 0, CALIBRATION_BOOTSTRAP_RESAMPLES, draws),
    );
    // Between: 1.96 × sd over the runs of log(run median).
    const sdShort = sampleSd([
      Math.log(median(A.workloads.short.ratios)),
      Math.log(median(B.workloads.short.ratios)),
    ]);
    expect(p.workloads.short.betweenLog).toBeCloseTo(1.96 * sdShort, 15);
    expect(p.workloads.short.logHalfWidth).toBeCloseTo(
      Math.hypot(p.workloads.short.withinLog, 1.96 * sdShort),
      15,
    );
    expect(p.workloads.short.low).toBeCloseTo(
      p.workloads.short.k * Math.exp(-p.workloads.short.logHalfWidth),
      12,
    );
    expect(p.workloads.short.high).toBeCloseTo(
      p.workloads.short.k * Math.exp(p.workloads.short.logHalfWidth),
      12,
    );
    // The pinned figures of this seeded data (a change to the method changes them).
    expect(p.workloads.long.withinLog).toBeCloseTo(0.011523794445550517, 14);
    expect(p.workloads.short.withinLog).toBeCloseTo(0.00895415936799876, 14);
    expect(p.workloads.short.betweenLog).toBeCloseTo(0.03334661604961643, 14);
    expect(p.workloads.short.halfWidthPct).toBeCloseTo(3.513087655017255, 10);
    // halfWidthPct of the key: 100 · (exp(mean_w H_w) − 1).
    const meanH = (p.workloads.long.logHalfWidth + p.workloads.short.logHalfWidth) / 2;
    expect(p.k.halfWidthPct).toBeCloseTo(100 * (Math.exp(meanH) - 1), 12);
    expect(p.k.halfWidthPct).toBeCloseTo(2.383683274704995, 10);
    expect(p.k).toMatchObject({ hardware: 'NVIDIA H200', pairs: 22, runs: 2 });
    expect(Object.keys(p.k.workloads)).toEqual(['long', 'short']);
    expect(p.k.workloads.short).toEqual({
      k: p.workloads.short.k,
      low: p.workloads.short.low,
      high: p.workloads.short.high,
    });
  });

  it('is deterministic for a seed, and another seed moves only the bootstrap', () => {
    expect(poolCalibration('cpu', [A, B])).toEqual(poolCalibration('cpu', [A, B]));
    const other = poolCalibration('cpu', [A, B], { seed: 30 });
    const p = poolCalibration('cpu', [A, B]);
    expect(other.workloads.short.k).toBe(p.workloads.short.k);
    expect(other.workloads.short.betweenLog).toBe(p.workloads.short.betweenLog);
    expect(other.workloads.short.withinLog).not.toBe(p.workloads.short.withinLog);
  });

  it('one run: no between-machine term; the interval is the bootstrap alone', () => {
    const p = poolCalibration('cpu', [A]);
    expect(p.workloads.short.betweenLog).toBe(0);
    expect(p.workloads.short.logHalfWidth).toBe(p.workloads.short.withinLog);
    expect(p.k).toMatchObject({ runs: 1, pairs: 12 });
  });

  it('a steady engine pair (every ratio equal) has K exactly and a zero half-width', () => {
    const run = (id: string) => ({ runId: id, workloads: { w: { ratios: Array(8).fill(1.5) } } });
    const p = poolCalibration('cpu', [run('a'), run('b')]);
    expect(p.k.workloads.w).toEqual({ k: 1.5, low: 1.5, high: 1.5 });
    expect(p.k.halfWidthPct).toBe(0);
  });

  it('the spread between machines widens K beyond what more pairs can shrink', () => {
    const steady = (id: string, k: number) => ({
      runId: id,
      workloads: { w: { ratios: Array(50).fill(k) } },
    });
    // Each machine is steady in itself, but the two disagree by 10 %.
    const p = poolCalibration('cpu', [steady('a', 2), steady('b', 2.2)]);
    expect(p.workloads.w.betweenLog).toBeCloseTo(
      (1.96 * Math.abs(Math.log(2.2) - Math.log(2))) / Math.SQRT2,
      12,
    );
    expect(p.k.halfWidthPct).toBeGreaterThan(6);
  });

  it('skips ratios that are not finite and positive, and counts pairs per workload (the fewest)', () => {
    const p = poolCalibration('cpu', [
      { runId: 'a', workloads: { x: { ratios: [1, 2, NaN, -1, 3] }, y: { ratios: [1, 1] } } },
    ]);
    expect(p.workloads.x.pairs).toBe(3);
    expect(p.workloads.x.k).toBe(2);
    expect(p.k.pairs).toBe(2);
  });

  it('no runs: no workloads, zero half-width', () => {
    expect(poolCalibration('cpu', []).k).toEqual({
      hardware: 'cpu',
      halfWidthPct: 0,
      pairs: 0,
      runs: 0,
      workloads: {},
    });
  });

  it('helpers: quantiles interpolate like numpy, bootstrap of a constant is 0, sd is n − 1', () => {
    expect(quantileSorted([1, 2, 3, 4], 0.25)).toBeCloseTo(1.75, 15);
    expect(quantileSorted([5], 0.9)).toBe(5);
    expect(bootstrapMedianLogHalfWidth([3, 3, 3], seededRandom(1), 100)).toBe(0);
    expect(sampleSd([1, 3])).toBeCloseTo(Math.SQRT2, 15);
    expect(median([3, 1, 2, 10])).toBe(2.5);
  });
});
