import { z } from 'zod';
import { Ack } from './ack';
import { AgentView } from './agents';
import {
  CheckView,
  LeaderboardEntry,
  LeaderboardView,
  LogLine,
  MetricView,
  RunResultView,
  RunView,
  SampleView,
} from '../rest/runs';
import { BenchmarkClockView } from '../rest/organizer';
import { BenchmarkNoticeEvent } from '../live/notice';

/**
 * The `/live` socket.io namespace for browsers and the CLI. Authenticated at the handshake by the
 * session cookie or `auth: { token: 'dryft_pat_…' }`; spectators connect with neither and may only
 * join leaderboards. Joins are acknowledged with an {@link Ack}: `{ ok, error?: { code, message } }`.
 */
export const JoinRun = z.object({
  runId: z.string(),
  /** Replay stored log lines after this seq, then live ones: no gap, no duplicate. */
  afterSeq: z.number().int().nonnegative().default(0),
});
export const LeaveRun = z.object({ runId: z.string() });
export const JoinLeaderboard = z.object({ benchmarkId: z.string() });
export const JoinTeam = z.object({ teamId: z.string() });
export const JoinAck = Ack.extend({
  run: RunView.optional(),
  leaderboard: LeaderboardView.optional(),
  /** `leaderboard.join`: the version of `leaderboard`, the base the next `leaderboard.diff` names. */
  leaderboardVersion: z.string().optional(),
});
export type JoinAck = z.infer<typeof JoinAck>;

export const LiveClientToServer = {
  'run.join': JoinRun,
  'run.leave': LeaveRun,
  'leaderboard.join': JoinLeaderboard,
  'leaderboard.leave': JoinLeaderboard,
  'team.join': JoinTeam,
  'agents.join': z.object({}),
} as const;

/** The `/live` client events as socket.io's typed event map (the hub's Namespace listens to these). */
export type LiveClientEvents = {
  [K in keyof typeof LiveClientToServer]: (
    payload: z.input<(typeof LiveClientToServer)[K]>,
    answer: (ack: JoinAck) => void,
  ) => void;
};

export const RunLogEvent = z.object({ runId: z.string(), lines: z.array(LogLine) });
export const RunStatusEvent = z.object({ run: RunView });
export const RunSampleEvent = z.object({ runId: z.string(), sample: SampleView });
export const RunCheckEvent = z.object({ runId: z.string(), check: CheckView });
export const RunMetricEvent = z.object({ runId: z.string(), metric: MetricView });
export const RunResultLiveEvent = z.object({ runId: z.string(), result: RunResultView });
/** The whole board, with its version (an opaque string: the same board has the same version). */
export const LeaderboardUpdateEvent = z.object({ leaderboard: LeaderboardView, version: z.string() });
/**
 * One changed place of a `leaderboard.diff`: the fields of its new entry that differ from a base
 * entry of the board the diff applies to. The base is the entry that held place `was` (the same
 * team or participant, moved), or without `was` the entry that held this place; a place with no base
 * carries every field. A team that only moved is `{ rank, was }`: the update reaches every spectator,
 * so what it does not carry is not encoded, sent or read 10,000 times (bench/RESULTS.md).
 */
export const LeaderboardDiffPlace = LeaderboardEntry.partial().extend({
  rank: z.number().int().positive(),
  was: z.number().int().positive().optional(),
});
export type LeaderboardDiffPlace = z.infer<typeof LeaderboardDiffPlace>;

/**
 * A board's change as the places that differ, sent instead of `leaderboard.update` when it is the
 * smaller of the two. It applies to the board of version `from` only (applyLeaderboardDiff): a
 * client holding another version missed a change and fetches the board again (`leaderboard.join`
 * answers with the board and its version). Ranks are 1…`size` without gaps, so an entry's place is
 * its rank: `places` are the places whose entry changed, and the board is cut to `size`.
 */
export const LeaderboardDiffEvent = z.object({
  benchmarkId: z.string(),
  from: z.string(),
  version: z.string(),
  updatedAt: z.string(),
  size: z.number().int().nonnegative(),
  places: z.array(LeaderboardDiffPlace),
});
export type LeaderboardDiffEvent = z.infer<typeof LeaderboardDiffEvent>;

/** An entry's fields in the order the API writes them (the order a rebuilt entry takes). */
const ENTRY_KEYS = Object.keys(LeaderboardEntry.shape) as (keyof LeaderboardEntry)[];

/** Who holds a place: the same holder on two boards is the same team (or participant), moved. */
const holderOf = (e: LeaderboardEntry): string =>
  e.teamSlug !== null ? `t:${e.teamSlug}` : e.userLogin !== null ? `u:${e.userLogin}` : `n:${e.name}`;

/** The fields of `e` other than its rank that differ from `base`'s (all of them without a base). */
function changedFields(e: LeaderboardEntry, base: LeaderboardEntry | undefined): Partial<LeaderboardEntry> {
  const out: Record<string, unknown> = {};
  for (const k of ENTRY_KEYS) {
    if (k === 'rank') continue;
    const v = e[k];
    const same =
      base !== undefined &&
      (v === base[k] || (typeof v === 'object' && JSON.stringify(v) === JSON.stringify(base[k])));
    if (!same) out[k] = v;
  }
  return out as Partial<LeaderboardEntry>;
}

const weight = (fields: object): number => JSON.stringify(fields).length;

/**
 * The diff from board `prev` (version `from`) to `next` (version `version`); null when it cannot be
 * one (another benchmark, rules version or ranking), and the caller sends the whole board. Each
 * changed place is said against whichever base is shorter: the entry that held the place, or the
 * same holder's entry where it was.
 */
export function leaderboardDiff(
  prev: LeaderboardView,
  from: string,
  next: LeaderboardView,
  version: string,
): LeaderboardDiffEvent | null {
  if (
    prev.benchmarkId !== next.benchmarkId ||
    prev.rulesVersion !== next.rulesVersion ||
    prev.ranks !== next.ranks ||
    // A diff carries places only: a change of the board's own fields (a final board published) goes whole.
    prev.finalPublishedAt !== next.finalPublishedAt
  )
    return null;
  const wasAt = new Map(prev.entries.map((e, i) => [holderOf(e), i]));
  const places: LeaderboardDiffPlace[] = [];
  next.entries.forEach((e, i) => {
    const here = changedFields(e, prev.entries[i]);
    if (i < prev.entries.length && Object.keys(here).length === 0) return;
    const j = wasAt.get(holderOf(e));
    const moved = j !== undefined && j !== i ? changedFields(e, prev.entries[j]) : null;
    if (moved && (i >= prev.entries.length || weight(moved) + 8 < weight(here)))
      places.push({ rank: i + 1, was: j! + 1, ...moved });
    else places.push({ rank: i + 1, ...here });
  });
  return {
    benchmarkId: next.benchmarkId,
    from,
    version,
    updatedAt: next.updatedAt,
    size: next.entries.length,
    places,
  };
}

/**
 * `board` (of version `version`) with `diff` applied; null when the diff is not for that board (another
 * benchmark, or a base other than `version`: a change was missed, fetch the board again) or does not
 * make a whole board.
 */
export function applyLeaderboardDiff(
  board: LeaderboardView,
  version: string,
  diff: LeaderboardDiffEvent,
): LeaderboardView | null {
  if (diff.benchmarkId !== board.benchmarkId || diff.from !== version) return null;
  const entries = board.entries.slice(0, diff.size);
  for (const p of diff.places) {
    if (p.rank < 1 || p.rank > diff.size) return null;
    // Bases are the entries of `board` as it was, never one this loop already replaced.
    const base = p.was === undefined ? board.entries[p.rank - 1] : board.entries[p.was - 1];
    if (p.was !== undefined && base === undefined) return null;
    const e: Record<string, unknown> = {};
    for (const k of ENTRY_KEYS) {
      if (k === 'rank') e.rank = p.rank;
      else if (Object.prototype.hasOwnProperty.call(p, k)) e[k] = p[k];
      else if (base) e[k] = base[k];
      else return null;
    }
    entries[p.rank - 1] = e as LeaderboardEntry;
  }
  if (entries.length !== diff.size) return null;
  // A plain loop: `some` would skip the holes of a diff that left a place unfilled.
  for (let i = 0; i < entries.length; i++) if (entries[i]?.rank !== i + 1) return null;
  return { ...board, entries, updatedAt: diff.updatedAt };
}
export const TeamRunEvent = z.object({ run: RunView });
export const AgentsUpdateEvent = z.object({ agents: z.array(AgentView) });
/** To every /live socket: a benchmark's round clock, availability or schedule changed. */
export const BenchmarkClockEvent = z.object({ clock: BenchmarkClockView });

/** Why a connection lost access to private rooms. */
export const AccessLostReason = z.enum([
  'token_revoked',
  'token_expired',
  'token_creator_left',
  'member_removed',
  'member_left',
  'logged_out',
  'session_expired',
]);
export type AccessLostReason = z.infer<typeof AccessLostReason>;
/**
 * The server took this connection out of private rooms (`run:<id>`, `team:<id>`, `agents`) because
 * its credentials or its membership no longer allow them. Sent once, after the rooms were left; no
 * private event follows. `teamId` is the team whose rooms were left, or null when the credential
 * itself is gone (then the connection is a spectator from now on: leaderboards only). Reconnecting
 * with the same credential will not bring the rooms back.
 */
export const AccessRevokedEvent = z.object({
  reason: AccessLostReason,
  message: z.string(),
  teamId: z.string().nullable(),
  rooms: z.array(z.string()),
  runIds: z.array(z.string()),
});
export type AccessRevokedEvent = z.infer<typeof AccessRevokedEvent>;

export const LiveServerToClient = {
  'run.log': RunLogEvent,
  'run.status': RunStatusEvent,
  'run.sample': RunSampleEvent,
  'run.check': RunCheckEvent,
  'run.metric': RunMetricEvent,
  'run.result': RunResultLiveEvent,
  'leaderboard.update': LeaderboardUpdateEvent,
  'leaderboard.diff': LeaderboardDiffEvent,
  'team.run': TeamRunEvent,
  'agents.update': AgentsUpdateEvent,
  'access.revoked': AccessRevokedEvent,
  'benchmark.clock': BenchmarkClockEvent,
  'benchmark.notice': BenchmarkNoticeEvent,
} as const;

export type LiveServerEvents = {
  [K in keyof typeof LiveServerToClient]: z.infer<(typeof LiveServerToClient)[K]>;
};

/** The server's emits on `/live` as socket.io's typed event map: every emit is checked by the compiler. */
export type LiveEmits = { [K in keyof LiveServerEvents]: (payload: LiveServerEvents[K]) => void };
