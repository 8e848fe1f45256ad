import { describe, expect, it } from 'vitest';
import {
  applyLeaderboardDiff,
  leaderboardDiff,
  LeaderboardDiffEvent,
  type LeaderboardEntry,
  type LeaderboardView,
} from '../src/index';
import { leaderboardEntry } from './fixtures';

const entry = (slug: string, score: number, extra: Partial<LeaderboardEntry> = {}): LeaderboardEntry =>
  leaderboardEntry({
    rank: 0,
    teamSlug: slug,
    score,
    runId: `00000000-0000-4000-8000-${String(score * 1000).padStart(12, '0')}`,
    ...extra,
  });
/** A board as the API writes it: ranked by score, ranks 1…n. */
const board = (entries: LeaderboardEntry[], updatedAt = '2026-11-30T12:00:00.000Z'): LeaderboardView => ({
  benchmarkId: 'toy-decode',
  rulesVersion: 1,
  ranks: 'teams',
  entries: [...entries].sort((a, b) => b.score - a.score).map((e, i) => ({ ...e, rank: i + 1 })),
  updatedAt,
});

describe('leaderboard diffs carry only what changed', () => {
  const teams = Array.from({ length: 20 }, (_, i) => entry(`t${i}`, 100 + i));
  const before = board(teams);

  it('says a team that only moved as its new and old place, and a new result as its changed fields', () => {
    // A newcomer at place 3: its fields against the entry it displaced, and the 18 teams below it
    // each as a move by one place (whole entries, this diff was longer than the board).
    const after = board([...teams, entry('zz', 117.5)], '2026-11-30T12:01:00.000Z');
    const d = leaderboardDiff(before, 'v1', after, 'v2')!;
    expect(d.places[0]).toEqual({
      rank: 3,
      name: 'Team zz',
      teamSlug: 'zz',
      score: 117.5,
      runId: after.entries[2].runId,
    });
    expect(d.places.slice(1)).toEqual(Array.from({ length: 18 }, (_, i) => ({ rank: i + 4, was: i + 3 })));
    expect(JSON.stringify(applyLeaderboardDiff(before, 'v1', d))).toBe(JSON.stringify(after));
    expect(JSON.stringify(d).length).toBeLessThan(JSON.stringify(after).length / 5);
  });

  it('a team that improves and climbs: its new result against its old entry', () => {
    const after = board(teams.map((e) => (e.teamSlug === 't5' ? entry('t5', 113.5) : e)));
    const d = leaderboardDiff(before, 'v1', after, 'v2')!;
    const climbed = d.places.find((p) => p.was === 15)!;
    expect(climbed).toEqual({ rank: 7, was: 15, score: 113.5, runId: after.entries[6].runId });
    expect(applyLeaderboardDiff(before, 'v1', d)).toEqual(after);
  });

  it('round-trips random changes byte for byte (key order included)', () => {
    let seed = 7;
    const rand = () => (seed = (seed * 16807) % 2147483647) / 2147483647;
    let prev = before;
    for (let step = 0; step < 300; step++) {
      const pool = prev.entries.map((e) => ({ ...e }));
      const k = Math.floor(rand() * 4);
      if (k === 0 && pool.length) pool.splice(Math.floor(rand() * pool.length), 1);
      else if (k === 1) pool.push(entry(`n${step}`, 90 + rand() * 40));
      else if (k === 2 && pool.length) {
        const i = Math.floor(rand() * pool.length);
        pool[i] = entry(pool[i].teamSlug!, pool[i].score + rand() * 10, {
          interval: { low: 1, high: 2, halfWidth: 0.5, level: 0.95 },
          pairs: 5,
        });
      } else if (pool.length) pool[Math.floor(rand() * pool.length)].name = `Renamed ${step}`;
      const next = board(pool, `2026-11-30T12:${String(step % 60).padStart(2, '0')}:00.000Z`);
      const d = leaderboardDiff(prev, `v${step}`, next, `v${step + 1}`)!;
      expect(LeaderboardDiffEvent.safeParse(d).success).toBe(true);
      expect(JSON.stringify(applyLeaderboardDiff(prev, `v${step}`, d))).toBe(JSON.stringify(next));
      prev = next;
    }
  });

  it('refuses a place without a base that does not carry every field, and a `was` off the board', () => {
    const after = board([...teams, entry('zz', 50)]);
    const d = leaderboardDiff(before, 'v1', after, 'v2')!;
    const { name: _n, ...partial } = d.places[0];
    expect(applyLeaderboardDiff(before, 'v1', { ...d, places: [partial] })).toBeNull();
    expect(applyLeaderboardDiff(before, 'v1', { ...d, size: 20, places: [{ rank: 1, was: 99 }] })).toBeNull();
  });

  it('sends the whole board when a final board was published (a field of the board itself changed, not a place)', () => {
    const live = { ...before, board: 'live' as const, finalPublishedAt: null };
    const published = {
      ...live,
      finalPublishedAt: '2026-11-30T12:05:00.000Z',
      updatedAt: '2026-11-30T12:05:00.000Z',
    };
    expect(leaderboardDiff(live, 'v1', published, 'v2')).toBeNull();
    expect(leaderboardDiff(published, 'v2', { ...published }, 'v2')).not.toBeNull();
  });
});
