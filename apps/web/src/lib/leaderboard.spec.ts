import { leaderboardDiff } from '@dryft/libs';
import type { LeaderboardEntry, LeaderboardView } from '@dryft/libs';
import { describe, expect, it } from 'vitest';
import { formatHalfWidth, formatInterval } from './format';
import { diffBoards, holderKey, leaderboardDiffStep, movementIsDrop, movementLabel } from './leaderboard';
import { leaderboardEntry } from '../../../../libs/test/fixtures';

const entry = (rank: number, slug: string, score: number, runId = `${slug}-${score}`): LeaderboardEntry =>
  leaderboardEntry({
    rank,
    teamSlug: slug,
    score,
    runId,
    name: slug.toUpperCase(),
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
    expect(d.get('team:b')).toEqual({ delta: 1, isNew: false, scoreChanged: true, scoreDelta: 20 });
    expect(d.get('team:a')).toEqual({ delta: -1, isNew: false, scoreChanged: false, scoreDelta: 0 });
    expect(d.get('team:c')?.isNew).toBe(true);
    expect(movementLabel(d.get('team:b')!)).toBe('▲ 1');
    expect(movementLabel(d.get('team:a')!)).toBe('▼ 1');
    expect(movementLabel(d.get('team:c')!)).toBe('new');
  });

  it('marks an improved score without a rank change', () => {
    const d = diffBoards([entry(1, 'a', 120)], [entry(1, 'a', 125)]);
    expect(movementLabel(d.get('team:a')!)).toBe('improved');
    expect(movementIsDrop(d.get('team:a')!)).toBe(false);
  });

  it('never calls a lower score without a rank change "improved" (a best disqualified, an older one counts)', () => {
    const d = diffBoards([entry(1, 'a', 125), entry(2, 'b', 100)], [entry(1, 'a', 118), entry(2, 'b', 100)]);
    expect(movementLabel(d.get('team:a')!)).toBe('lowered');
    expect(movementIsDrop(d.get('team:a')!)).toBe(true);
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
    expect(formatHalfWidth(iv, 101.5)).toBe('± 3.0');
    // an asymmetric interval beside its score is shown as it is, not as ± its half-width
    expect(formatHalfWidth({ low: 90.6, high: 113.3, halfWidth: 11.3, level: 0.95 }, 104.1)).toBe(
      '+9.2 −13.5',
    );
    expect(formatInterval(iv, 7)).toBe('95 % interval 98.5–104.5 · 7 pairs');
    expect(formatInterval(iv, null)).toBe('95 % interval 98.5–104.5');
    expect(formatInterval(null, 7)).toBe('');
  });
});

describe('leaderboardDiffStep', () => {
  const board = (entries: LeaderboardEntry[], updatedAt = '2026-01-01T00:00:00Z'): LeaderboardView => ({
    benchmarkId: 'toy-decode',
    rulesVersion: 1,
    ranks: 'teams',
    entries,
    updatedAt,
  });
  const v1 = board([entry(1, 'a', 120), entry(2, 'b', 110), entry(3, 'c', 100)]);
  const v2 = board([entry(1, 'b', 130), entry(2, 'a', 120), entry(3, 'c', 100)], '2026-01-01T00:01:00Z');
  const d12 = leaderboardDiff(v1, '"v1"', v2, '"v2"')!;

  it('applies a diff to the board it was made from', () => {
    // b passed a with a new result; a only moved down.
    expect(d12.places).toEqual([
      { rank: 1, was: 2, score: 130, runId: 'b-130' },
      { rank: 2, was: 1 },
    ]);
    expect(leaderboardDiffStep(v1, '"v1"', d12)).toEqual({ kind: 'apply', board: v2, version: '"v2"' });
  });

  it('fetches the board again after a missed diff', () => {
    const v3 = board([entry(1, 'b', 130), entry(2, 'a', 120), entry(3, 'c', 105)], '2026-01-01T00:02:00Z');
    const d23 = leaderboardDiff(v2, '"v2"', v3, '"v3"')!;
    // The page still holds v1: the v1 → v2 diff never arrived.
    expect(leaderboardDiffStep(v1, '"v1"', d23)).toEqual({ kind: 'refetch' });
    // A board fetched over REST has no version: the first diff fetches it again over the socket.
    expect(leaderboardDiffStep(v1, null, d12)).toEqual({ kind: 'refetch' });
  });

  it('ignores a diff it already has, another board, or one before the board loaded', () => {
    expect(leaderboardDiffStep(v2, '"v2"', d12)).toEqual({ kind: 'ignore' });
    expect(leaderboardDiffStep(null, null, d12)).toEqual({ kind: 'ignore' });
    expect(leaderboardDiffStep({ ...v1, benchmarkId: 'other' }, '"v1"', d12)).toEqual({ kind: 'ignore' });
  });

  it('grows and shrinks the board', () => {
    const grown = board([...v1.entries, entry(4, 'd', 90)]);
    const up = leaderboardDiff(v1, '"v1"', grown, '"g"')!;
    expect(up.places.map((e) => e.teamSlug)).toEqual(['d']);
    expect(leaderboardDiffStep(v1, '"v1"', up)).toEqual({ kind: 'apply', board: grown, version: '"g"' });
    const down = leaderboardDiff(grown, '"g"', v1, '"v1"')!;
    expect(down.places).toEqual([]);
    expect(down.size).toBe(3);
    expect(leaderboardDiffStep(grown, '"g"', down)).toEqual({ kind: 'apply', board: v1, version: '"v1"' });
  });

  it('refuses a diff that leaves a place empty', () => {
    const bad = {
      ...leaderboardDiff(v1, '"v1"', board([...v1.entries, entry(4, 'd', 90)]), '"g"')!,
      size: 5,
    };
    expect(leaderboardDiffStep(v1, '"v1"', bad)).toEqual({ kind: 'refetch' });
  });

  it('makes no diff across rules versions or rankings', () => {
    expect(leaderboardDiff(v1, '"v1"', { ...v2, rulesVersion: 2 }, '"r"')).toBeNull();
    expect(leaderboardDiff(v1, '"v1"', { ...v2, ranks: 'users' }, '"u"')).toBeNull();
  });
});
