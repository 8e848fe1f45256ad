import { z } from 'zod';
import { Ack } from './ack';
import { AgentView } from './agents';
import {
  CheckView,
  LeaderboardView,
  LogLine,
  MetricView,
  RunResultView,
  RunView,
  SampleView,
} from '../rest/runs';
import { BenchmarkClockView } from '../rest/organizer';

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

export const RunLogEvent = z.object({ runId: z.string(), lines: z.array(LogLine) });
export const RunStatusEvent = z.object({ run: RunView });
export const RunSampleEvent = z.object({ runId: z.string(), sample: SampleView });
export const RunCheckEvent = z.object({ runId: z.string(), check: CheckView });
export const RunMetricEvent = z.object({ runId: z.string(), metric: MetricView });
export const RunResultLiveEvent = z.object({ runId: z.string(), result: RunResultView });
export const LeaderboardUpdateEvent = z.object({ leaderboard: LeaderboardView });
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
  'team.run': TeamRunEvent,
  'agents.update': AgentsUpdateEvent,
  'access.revoked': AccessRevokedEvent,
  'benchmark.clock': BenchmarkClockEvent,
} as const;

export type LiveServerEvents = {
  [K in keyof typeof LiveServerToClient]: z.infer<(typeof LiveServerToClient)[K]>;
};

/** The server's emits on `/live` as socket.io's typed event map: every emit is checked by the compiler. */
export type LiveEmits = { [K in keyof LiveServerEvents]: (payload: LiveServerEvents[K]) => void };
