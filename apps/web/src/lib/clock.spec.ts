import { describe, expect, it } from 'vitest';
import { formatCountdown, roundPhase } from './clock';

describe('round clock countdown', () => {
  it('formats days, hours, minutes and seconds', () => {
    expect(formatCountdown(0)).toBe('00:00:00');
    expect(formatCountdown(59_999)).toBe('00:00:59');
    expect(formatCountdown(3_600_000 + 61_000)).toBe('01:01:01');
    expect(formatCountdown(2 * 86_400_000 + 3 * 3_600_000 + 14 * 60_000 + 5_000)).toBe('2d 03:14:05');
  });

  it('places now before, during or after the round', () => {
    const round = { startsAt: '2026-12-01T00:00:00Z', endsAt: '2026-12-02T00:00:00Z' };
    const t = (iso: string) => new Date(iso).getTime();
    expect(roundPhase(round, t('2026-11-30T23:00:00Z'))).toEqual({ phase: 'upcoming', ms: 3_600_000 });
    expect(roundPhase(round, t('2026-12-01T12:00:00Z'))).toEqual({ phase: 'running', ms: 12 * 3_600_000 });
    expect(roundPhase(round, t('2026-12-02T00:00:01Z'))).toEqual({ phase: 'ended', ms: 1000 });
  });
});
