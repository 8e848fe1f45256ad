import { describe, expect, it } from 'vitest';
import { indexRange, timeRange } from './chart-range';

describe('chart ranges', () => {
  it('one sample: the axis is that sample', () => {
    expect(indexRange(0, 0)).toEqual([-0.5, 0.5]);
    expect(indexRange(3, 3)).toEqual([2.5, 3.5]);
    expect(indexRange(0, 9)).toEqual([0, 9.5]);
  });

  it('a best score over time never runs hours past its last point', () => {
    const now = 1_764_600_000;
    const [lo, hi] = timeRange(now - 120, now);
    expect(hi - now).toBeLessThanOrEqual(60);
    expect(now - 120 - lo).toBe(300);
    const [, hi2] = timeRange(now - 30 * 86400, now);
    expect(hi2 - now).toBe(60);
  });
});
