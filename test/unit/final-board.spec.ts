import { describe, expect, it } from 'vitest';
import {
  buildFinalBoard,
  median,
  medianInterval,
  type VerifiedHolder,
} from '../../apps/api/src/reruns/final-board';

const iv = (low: number, high: number) => ({ low, high, halfWidth: (high - low) / 2, level: 0.95 });
const holder = (name: string, score: number, reruns: (number | null)[], at = 0): VerifiedHolder => ({
  key: name,
  name,
  teamSlug: name.toLowerCase(),
  userLogin: null,
  source: { runId: `run-${name}`, score, interval: iv(score - 3, score + 3), finishedAt: new Date(at) },
  reruns: reruns.map((s) =>
    s === null
      ? { status: 'failed', score: null, interval: null, pairs: null }
      : { status: 'succeeded', score: s, interval: iv(s - 2, s + 2), pairs: 6 },
  ),
});

describe('the final board’s median ranking', () => {
  it('takes the middle score (the mean of the two middle ones for an even count) and its interval', () => {
    expect(median([])).toBeNull();
    expect(median([3, 1, 2])).toBe(2);
    expect(median([4, 1, 3, 2])).toBe(2.5);
    expect(
      medianInterval([
        { score: 5, interval: iv(4, 6) },
        { score: 1, interval: iv(0, 2) },
        { score: 3, interval: iv(2, 4) },
      ]),
    ).toEqual(iv(2, 4));
    expect(
      medianInterval([
        { score: 1, interval: iv(0, 2) },
        { score: 3, interval: iv(2, 5) },
      ]),
    ).toEqual(iv(0, 5));
    expect(medianInterval([{ score: 1, interval: null }])).toBeNull();
  });

  it('ranks by the median, flags a median outside the best run’s interval, and puts unverified places after', () => {
    const { entries, verifications, flags } = buildFinalBoard(
      [
        holder('Ann', 130, [118, 121, 119]),
        holder('Bob', 120, [122, null, 120]),
        holder('Cy', 125, [null, null]),
      ],
      [
        {
          name: 'Dee',
          teamSlug: 'dee',
          userLogin: null,
          score: 110,
          interval: null,
          pairs: null,
          runId: 'run-Dee',
          achievedAt: new Date(0).toISOString(),
        },
      ],
    );
    expect(entries.map((e) => [e.rank, e.name, e.score])).toEqual([
      [1, 'Bob', 121],
      [2, 'Ann', 119],
      [3, 'Cy', 125],
      [4, 'Dee', 110],
    ]);
    expect(entries[0].interval).toEqual(iv(118, 124));
    expect(entries[0].overlapsNext).toBe(true);
    expect(verifications.map((v) => [v.runId, v.succeeded, v.reproduced])).toEqual([
      ['run-Ann', 3, false],
      ['run-Bob', 2, true],
      ['run-Cy', 0, null],
    ]);
    expect(flags.map((f) => [f.name, f.median])).toEqual([
      ['Ann', 119],
      ['Cy', null],
    ]);
    expect(flags[0].message).toContain('119.00');
    expect(flags[1].message).toContain('none of the 2 re-runs succeeded');
  });
});
