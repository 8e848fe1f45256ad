import { describe, expect, it } from 'vitest';
import { formatScoreInterval } from '../src/output';

describe('formatScoreInterval', () => {
  it('prints the half-width, the interval and the pairs of an official score', () => {
    const iv = { low: 98.456, high: 104.544, halfWidth: 3.044, level: 0.95 };
    expect(formatScoreInterval(iv, 7)).toBe(' ± 3.04 (95 % interval 98.46–104.54, 7 pairs)');
    expect(formatScoreInterval(iv)).toBe(' ± 3.04 (95 % interval 98.46–104.54)');
  });
  it('prints nothing for a score without an interval (public, training)', () => {
    expect(formatScoreInterval(null, null)).toBe('');
    expect(formatScoreInterval(undefined)).toBe('');
  });
});
