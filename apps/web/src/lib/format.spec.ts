import { describe, expect, it } from 'vitest';
import { workloadSpread } from './format';

describe('the workloads table’s spread', () => {
  it('is the stability check’s figure on a paired run, not the TPOT spread', () => {
    expect(workloadSpread({ spreadPct: 41.2, ratioSpreadPct: 6.34 }).text).toBe('6.3%');
    expect(workloadSpread({ spreadPct: 41.2, ratioSpreadPct: 6.34 }).title).toContain(
      'timing-stability check',
    );
  });

  it('falls back to the TPOT spread on a public run', () => {
    expect(workloadSpread({ spreadPct: 12.04, ratioSpreadPct: null }).text).toBe('12.0%');
    expect(workloadSpread({ spreadPct: null }).text).toBe('—');
  });
});
