import { applyLeaderboardDiff } from '@dryft/libs';
import type { LeaderboardDiffEvent, LeaderboardEntry, LeaderboardView } from '@dryft/libs';

export interface Movement {
  /** Positive: moved up this many places. Negative: down. */
  delta: number;
  isNew: boolean;
  scoreChanged: boolean;
  /** New score minus old (0 when unchanged or new): higher is better on every board. */
  scoreDelta: number;
}

/** One holder per row: a team by slug, a participant by login, else the display name. */
export function holderKey(e: Pick<LeaderboardEntry, 'teamSlug' | 'userLogin' | 'name'>): string {
  return e.teamSlug ? `team:${e.teamSlug}` : e.userLogin ? `user:${e.userLogin}` : `name:${e.name}`;
}

/** What changed between two versions of a board, per holder of the new one. */
export function diffBoards(
  previous: readonly LeaderboardEntry[] | null,
  next: readonly LeaderboardEntry[],
): Map<string, Movement> {
  const out = new Map<string, Movement>();
  if (!previous) return out;
  const before = new Map(previous.map((e) => [holderKey(e), e]));
  for (const e of next) {
    const key = holderKey(e);
    const old = before.get(key);
    if (!old) out.set(key, { delta: 0, isNew: true, scoreChanged: true, scoreDelta: 0 });
    else if (old.rank !== e.rank || old.score !== e.score || old.runId !== e.runId) {
      out.set(key, {
        delta: old.rank - e.rank,
        isNew: false,
        scoreChanged: old.score !== e.score,
        scoreDelta: e.score - old.score,
      });
    }
  }
  return out;
}

/**
 * The badge beside a row: places moved, else whether the score went up ("improved") or down
 * ("lowered": its best was disqualified or invalidated and an earlier result counts now).
 */
export function movementLabel(m: Movement): string {
  if (m.isNew) return 'new';
  if (m.delta > 0) return `▲ ${m.delta}`;
  if (m.delta < 0) return `▼ ${-m.delta}`;
  if (!m.scoreChanged) return '';
  return m.scoreDelta < 0 ? 'lowered' : 'improved';
}

/** Whether the movement is bad news for the holder (a lower place or a lower score). */
export function movementIsDrop(m: Movement): boolean {
  return m.delta < 0 || (m.delta === 0 && m.scoreDelta < 0);
}

/** What a `leaderboard.diff` does to the board a page holds. */
export type DiffStep =
  | { kind: 'apply'; board: LeaderboardView; version: string }
  /** Another board's, one the page already has, or no board yet (its load is on the way). */
  | { kind: 'ignore' }
  /** A change was missed (or the page's board has no version): fetch the board again. */
  | { kind: 'refetch' };

/** The step for `diff` given the page's `board` and its `version` (null: a board of unknown version). */
export function leaderboardDiffStep(
  board: LeaderboardView | null,
  version: string | null,
  diff: LeaderboardDiffEvent,
): DiffStep {
  if (!board || diff.benchmarkId !== board.benchmarkId || diff.version === version) return { kind: 'ignore' };
  const next = version === null ? null : applyLeaderboardDiff(board, version, diff);
  return next ? { kind: 'apply', board: next, version: diff.version } : { kind: 'refetch' };
}
