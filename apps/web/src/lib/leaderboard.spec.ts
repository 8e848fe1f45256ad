import type { LeaderboardEntry } from '@dryft/libs';
import { describe, expect, it } from 'vitest';
import { formatHalfWidth, formatInterval } from './format';
import { diffBoards, holderKey, movementLabel } from './leaderboard';

const entry = (rank: number, slug: string, score: number, runId = `${slug}-${score}`): LeaderboardEntry => ({
  rank,
  name: slug.toUpperCase(),
  teamSlug: slug,
  userLogin: null,
  score,
  interval: null,
  pairs: null,
  overlapsPrevious: false,
  overlapsNext: false,
  runId,
  achievedAt: '2026-01-01T00:00:00Z',
});

describe('diffBoards', () => {
  it('marks nothing on the first load', () => {
    expect(diffBoards(null, [entry(1, 'a', 120)]).size).toBe(0);
  });

  it('marks a team that overtakes and the one it passed, and a newcomer', () => {
    const before = [entry(1, 'a', 120), entry(2, 'b', 110)];
    const after = [entry(1, 'b', 130), entry(2, 'a', 120), entry(3, 'c', 100)];
    const d = diffBoards(before, after);
    expect(d.get('team:b')).toEqual({ delta: 1, isNew: false, scoreChanged: true });
    expect(d.get('team:a')).toEqual({ delta: -1, isNew: false, scoreChanged: false });
    expect(d.get('team:c')?.isNew).toBe(true);
    expect(movementLabel(d.get('team:b')!)).toBe('▲ 1');
    expect(movementLabel(d.get('team:a')!)).toBe('▼ 1');
    expect(movementLabel(d.get('team:c')!)).toBe('new');
  });

  it('marks an improved score without a rank change', () => {
    const d = diffBoards([entry(1, 'a', 120)], [entry(1, 'a', 125)]);
    expect(movementLabel(d.get('team:a')!)).toBe('improved');
  });

  it('keys participants by login when the benchmark ranks users', () => {
    expect(holderKey({ teamSlug: null, userLogin: 'ada', name: 'ada' })).toBe('user:ada');
  });
});

describe('score intervals', () => {
  it('formats the half-width and the interval with its pairs', () => {
    const iv = { low: 98.46, high: 104.54, halfWidth: 3.04, level: 0.95 };
    expect(formatHalfWidth(iv)).toBe('± 3.0');
    expect(formatHalfWidth(null)).toBe('');
    expect(formatInterval(iv, 7)).toBe('95 % interval 98.5–104.5 · 7 pairs');
    expect(formatInterval(iv, null)).toBe('95 % interval 98.5–104.5');
    expect(formatInterval(null, 7)).toBe('');
  });
});
