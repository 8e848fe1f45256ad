import type { FinalBoardFlag, FinalVerification, LeaderboardEntry, ScoreInterval } from '@dryft/libs';

/** One verified holder: its best run and that run's re-runs. */
export interface VerifiedHolder {
  key: string;
  name: string;
  teamSlug: string | null;
  userLogin: string | null;
  source: {
    runId: string;
    score: number;
    interval: ScoreInterval | null;
    finishedAt: Date;
  };
  reruns: { status: string; score: number | null; interval: ScoreInterval | null; pairs: number | null }[];
}

/** A live board entry below the verified ones (its score stands, unverified). */
export type UnverifiedEntry = Omit<LeaderboardEntry, 'rank' | 'overlapsPrevious' | 'overlapsNext'>;

/** The middle value (the mean of the two middle ones for an even count); null for none. */
export function median(values: number[]): number | null {
  if (values.length === 0) return null;
  const s = [...values].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? s[mid] : (s[mid - 1] + s[mid]) / 2;
}

/**
 * The interval shown with a median: the median run's own ranking interval (an odd count), or the
 * span of the two middle runs' intervals (an even count). Null where those runs measured none.
 */
export function medianInterval(
  runs: { score: number; interval: ScoreInterval | null }[],
): ScoreInterval | null {
  if (runs.length === 0) return null;
  const s = [...runs].sort((a, b) => a.score - b.score);
  const mid = Math.floor(s.length / 2);
  const middle = s.length % 2 ? [s[mid]] : [s[mid - 1], s[mid]];
  if (middle.some((r) => !r.interval)) return null;
  const low = Math.min(...middle.map((r) => r.interval!.low));
  const high = Math.max(...middle.map((r) => r.interval!.high));
  return { low, high, halfWidth: (high - low) / 2, level: middle[0].interval!.level };
}

const overlap = (x: ScoreInterval | null, y: ScoreInterval | null | undefined) =>
  !!x && !!y && x.low <= y.high && y.low <= x.high;

const fmt = (n: number) => n.toFixed(2);

/**
 * The verified final board: the verified holders ranked by the median of their re-runs' scores
 * (ties: who reached the source score first), those whose re-runs all failed after them on their
 * own score, then every other holder of the live board in its live order, unverified. ≈ marks as on
 * the live board (neighbours' intervals overlap). A holder whose median falls outside its best
 * run's interval is flagged, with both figures.
 */
export function buildFinalBoard(
  verified: VerifiedHolder[],
  rest: UnverifiedEntry[],
): { entries: LeaderboardEntry[]; verifications: FinalVerification[]; flags: FinalBoardFlag[] } {
  const flags: FinalBoardFlag[] = [];
  const verifications: FinalVerification[] = [];
  const rows = verified.map((h) => {
    const ok = h.reruns.filter((r) => r.status === 'succeeded' && r.score !== null) as {
      score: number;
      interval: ScoreInterval | null;
      pairs: number | null;
    }[];
    const m = median(ok.map((r) => r.score));
    const src = h.source.interval;
    const reproduced = m === null || !src ? null : m >= src.low && m <= src.high;
    if (reproduced === false)
      flags.push({
        name: h.name,
        sourceRunId: h.source.runId,
        sourceScore: h.source.score,
        sourceInterval: src,
        median: m,
        message: `${h.name}: the median of ${ok.length} re-runs, ${fmt(m!)}, is outside the best run's interval ${fmt(src!.low)}–${fmt(src!.high)} (score ${fmt(h.source.score)}).`,
      });
    if (m === null && h.reruns.length > 0)
      flags.push({
        name: h.name,
        sourceRunId: h.source.runId,
        sourceScore: h.source.score,
        sourceInterval: src,
        median: null,
        message: `${h.name}: none of the ${h.reruns.length} re-runs succeeded; its best run (score ${fmt(h.source.score)}) is not verified.`,
      });
    const entry: UnverifiedEntry = {
      name: h.name,
      teamSlug: h.teamSlug,
      userLogin: h.userLogin,
      score: m ?? h.source.score,
      interval: m === null ? src : medianInterval(ok),
      pairs: m === null ? null : (ok.find((r) => r.score === m)?.pairs ?? null),
      runId: h.source.runId,
      achievedAt: h.source.finishedAt.toISOString(),
    };
    verifications.push({
      runId: h.source.runId,
      reruns: h.reruns.length,
      succeeded: ok.length,
      scores: ok.map((r) => r.score),
      sourceScore: h.source.score,
      sourceInterval: src,
      reproduced,
    });
    return { entry, verified: m !== null, at: h.source.finishedAt.getTime() };
  });
  rows.sort(
    (a, b) => Number(b.verified) - Number(a.verified) || b.entry.score - a.entry.score || a.at - b.at,
  );
  const all: UnverifiedEntry[] = [...rows.map((r) => r.entry), ...rest];
  const entries = all.map((e, i) => ({
    ...e,
    rank: i + 1,
    overlapsPrevious: overlap(e.interval, all[i - 1]?.interval),
    overlapsNext: overlap(e.interval, all[i + 1]?.interval),
  }));
  return { entries, verifications, flags };
}
