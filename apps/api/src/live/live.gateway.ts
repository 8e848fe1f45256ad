import { Inject, Injectable, Logger, OnApplicationBootstrap, OnModuleDestroy } from '@nestjs/common';
import { leaderboardDiff, LiveClientToServer, refusal } from '@dryft/libs';
import type { AccessLostReason, AccessRevokedEvent, JoinAck, LeaderboardView } from '@dryft/libs';
import type { z } from 'zod';
import { AgentEvents } from '../agents/agent-events';
import { AgentsService } from '../agents/agents.service';
import { AuthService, SESSION_COOKIE } from '../auth/auth.service';
import { BenchmarkRegistry } from '../benchmarks/benchmark-registry';
import { Clock } from '../common/clock';
import { databaseUnavailable, isDatabaseUnavailable } from '../common/database-errors';
import { EventBus } from '../common/event-bus';
import { traceEnd, traceMark } from '../common/latency-trace';
import type { Principal } from '../common/principal';
import { CONFIG, Config } from '../config/config';
import { boardVersion, isPublicChange, PublicSnapshots, Snapshot } from '../leaderboards/public-snapshots';
import { RunsRepository } from '../runs/runs.repository';
import { RunsService } from '../runs/runs.service';
import { TeamsService } from '../teams/teams.service';
import { RemoteRunLines } from './remote-run-lines';
import { RunChannels } from './run-channels';
import { answerUnknownEvents, authenticatedHandshake, onAcked } from '../socket/socket-handlers';
import { LiveNamespace, LiveSocket, SocketServer } from '../socket/socket-server';

type LiveEvent = keyof typeof LiveClientToServer;
type Payload<E extends LiveEvent> = z.infer<(typeof LiveClientToServer)[E]>;

/**
 * A board changes, and its spectators get it at once (the broadcast leaves on the next turn of the
 * event loop, so changes made together cost one); further changes within this window after a
 * broadcast wait for its end and cost one more read and broadcast between them (runs finishing
 * together, a rules bump). A single change pays no window at all (bench/RESULTS.md).
 */
export const LEADERBOARD_COALESCE_MS = 50;

/** One board's broadcast schedule: one due on the next turn, or a window open after one. */
interface BoardBroadcast {
  immediate?: NodeJS.Immediate;
  timer?: NodeJS.Timeout;
  /** A change came after the last broadcast started: one more at the end of the window. */
  pending: boolean;
}
const AGENTS_COALESCE_MS = 250;
/** Cross-replica: a credential or a membership stopped granting access; every replica cuts its own sockets. */
const REMOTE_ACCESS_LOST = 'dryft:access.lost';
/** Cross-replica: public data changed; every replica drops its snapshots of it (PublicSnapshots). */
const REMOTE_PUBLIC_CHANGED = 'dryft:public.changed';
/** setTimeout's longest delay; a later expiry re-arms the timer. */
const MAX_TIMER_MS = 2 ** 31 - 1;

/**
 * Who lost access to what: every connection matched by `tokenId`, `sessionHash` or (`userId` and
 * `teamId`) leaves the private rooms of `teamId` (a membership ended) or all of them (the credential
 * itself is gone).
 */
interface AccessLost {
  reason: AccessLostReason;
  tokenId?: string;
  sessionHash?: string;
  userId?: string;
  teamId?: string;
}

const ACCESS_MESSAGES: Record<AccessLostReason, string> = {
  token_revoked:
    'The API token this connection used was revoked; its live streams were stopped. Ask a team owner or admin for a new token.',
  token_expired:
    'The API token this connection used expired; its live streams were stopped. Ask a team owner or admin for a new token.',
  token_creator_left:
    'The API token this connection used was created by someone who is no longer a member of the team, so it stopped working; its live streams were stopped. Ask a team owner or admin for a new token.',
  member_removed:
    "You were removed from this team, so its runs and logs are no longer visible to you; live streams of the team's runs were stopped.",
  member_left:
    "You left this team, so its runs and logs are no longer visible to you; live streams of the team's runs were stopped.",
  logged_out: 'You signed out, so live streams of your team were stopped. Sign in again to follow runs.',
  session_expired:
    'Your session expired, so live streams of your team were stopped. Sign in again to follow runs.',
};

/** Per-socket bookkeeping for revocation: which run rooms belong to which team, and the expiry timer. */
interface SocketAccess {
  runTeams: Map<string, string>;
  /** Bumped on every revocation, so a join that was being checked meanwhile is undone. */
  epoch: number;
  expiry?: NodeJS.Timeout;
}
const access = (socket: LiveSocket): SocketAccess => {
  const data = socket.data as { access?: SocketAccess };
  data.access ??= { runTeams: new Map(), epoch: 0 };
  return data.access;
};

function parseCookies(header: string | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const part of (header ?? '').split(';')) {
    const i = part.indexOf('=');
    if (i <= 0) continue;
    const k = part.slice(0, i).trim();
    const v = part.slice(i + 1).trim();
    try {
      out[k] = decodeURIComponent(v);
    } catch {
      out[k] = v;
    }
  }
  return out;
}

/** A lookup's fallback for a bad id, but a database outage is passed on (said as such, not "not found"). */
const orUnavailable =
  <T>(fallback: T) =>
  (err: unknown): T => {
    if (isDatabaseUnavailable(err)) throw err;
    return fallback;
  };

/**
 * The `/live` namespace for browsers and the CLI. The handshake authenticates with the session
 * cookie or `auth.token` (a team API token) through the same AuthService as HTTP; a connection with
 * neither is a spectator and may only join leaderboards. Rooms: `run:<id>` (the run's team only),
 * `leaderboard:<benchmark>` (anyone), `team:<id>` (members), `agents` (organizers).
 */
@Injectable()
export class LiveGateway implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger('LiveGateway');
  private nsp!: LiveNamespace;
  private channels!: RunChannels;
  private readonly unsubscribe: (() => void)[] = [];
  private readonly boardBroadcasts = new Map<string, BoardBroadcast>();
  /** The board each benchmark's last broadcast carried: the base of the next diff. */
  private readonly boardsSent = new Map<string, Snapshot<LeaderboardView>>();
  private agentsTimer?: NodeJS.Timeout;
  private sweepTimer?: NodeJS.Timeout;
  private sweeping = false;

  constructor(
    private readonly sockets: SocketServer,
    private readonly auth: AuthService,
    private readonly teams: TeamsService,
    private readonly runs: RunsService,
    private readonly runsRepo: RunsRepository,
    private readonly boards: PublicSnapshots,
    private readonly registry: BenchmarkRegistry,
    private readonly agents: AgentsService,
    private readonly agentEvents: AgentEvents,
    private readonly bus: EventBus,
    private readonly clock: Clock,
    private readonly remoteLines: RemoteRunLines,
    @Inject(CONFIG) private readonly config: Config,
  ) {}

  onApplicationBootstrap(): void {
    this.nsp = this.sockets.live;
    this.channels = new RunChannels(
      () => this.nsp,
      (runId, after, limit) => this.runsRepo.getLogs(runId, after, limit),
      this.remoteLines,
    );
    // Lines stored on another replica reach this one only for runs watched here (RunChannels).
    this.remoteLines.onLines(
      (runId, lines, storedUpTo) => void this.channels.deliver(runId, lines, storedUpTo),
    );
    this.remoteLines.onReconnected(
      () =>
        void this.channels
          .catchUp()
          .catch((err: unknown) =>
            this.logger.error(`catch-up after Redis came back: ${(err as Error).message}`),
          ),
    );
    this.nsp.use(
      authenticatedHandshake(this.logger, 'live', async (socket: LiveSocket) => {
        const token = (socket.handshake.auth as { token?: unknown } | undefined)?.token;
        const cookie = parseCookies(socket.handshake.headers.cookie)[SESSION_COOKIE];
        const creds =
          typeof token === 'string' && token
            ? { authorization: `Bearer ${token}` }
            : cookie
              ? { sessionCookie: cookie }
              : {};
        socket.data.principal = await this.auth.authenticate(creds);
      }),
    );
    this.nsp.on('connection', (socket) => this.onConnection(socket));
    this.sweepTimer = setInterval(
      () => void this.sweepAccess(),
      this.config.LIVE_ACCESS_SWEEP_SECONDS * 1000,
    );
    this.sweepTimer.unref();
    this.nsp.on(REMOTE_PUBLIC_CHANGED, (change: unknown) => {
      if (!isPublicChange(change)) return;
      this.boards.apply(change);
      // The replica where the change happened broadcasts it to every replica's spectators: this
      // one's last board is no longer theirs, so its next broadcast is the whole board, not a diff.
      if (change.kind === 'people') this.boardsSent.clear();
      else this.boardsSent.delete(change.benchmarkId);
    });
    if (this.sockets.clustered)
      this.boards.crossReplica((change) => this.nsp.serverSideEmit(REMOTE_PUBLIC_CHANGED, change));
    this.nsp.on(REMOTE_ACCESS_LOST, (lost: AccessLost) => {
      if (lost && typeof lost.reason === 'string' && lost.reason in ACCESS_MESSAGES)
        this.accessLostHere(lost);
    });
    const accessLost = (lost: AccessLost) => {
      this.accessLostHere(lost);
      if (this.sockets.clustered) this.nsp.serverSideEmit(REMOTE_ACCESS_LOST, lost);
    };

    const toRun = (runId: string) => this.nsp.to(`run:${runId}`);
    this.unsubscribe.push(
      this.bus.on('run.logs', ({ runId, lines }) => {
        void this.channels.deliver(runId, lines);
        // Apart from the adapter's stream: on another replica run.status may overtake these lines;
        // the run follower (CLI, web) reads the log to its end over REST when a run ends.
        this.remoteLines.publish(runId, lines);
      }),
      this.bus.on('run.status', ({ run }) => {
        this.nsp.to(`run:${run.id}`).emit('run.status', { run });
        if (run.teamId) this.nsp.to(`team:${run.teamId}`).emit('team.run', { run });
      }),
      this.bus.on('run.sample', (p) => void toRun(p.runId).emit('run.sample', p)),
      this.bus.on('run.check', (p) => void toRun(p.runId).emit('run.check', p)),
      this.bus.on('run.metric', (p) => void toRun(p.runId).emit('run.metric', p)),
      this.bus.on('run.result', (p) => void toRun(p.runId).emit('run.result', p)),
      this.bus.on('leaderboard.changed', ({ benchmarkId }) => this.leaderboardChanged(benchmarkId)),
      this.agentEvents.onChanged(() => this.agentsChanged()),
      this.bus.on('access.lost', (lost) => accessLost(lost)),
      this.bus.on('team.member_removed', ({ teamId, userId }) =>
        accessLost({ reason: 'member_removed', teamId, userId }),
      ),
      this.bus.on('team.member_left', ({ teamId, userId }) =>
        accessLost({ reason: 'member_left', teamId, userId }),
      ),
    );
  }

  onModuleDestroy(): void {
    for (const u of this.unsubscribe) u();
    for (const b of this.boardBroadcasts.values()) {
      if (b.immediate) clearImmediate(b.immediate);
      if (b.timer) clearTimeout(b.timer);
    }
    if (this.agentsTimer) clearTimeout(this.agentsTimer);
    if (this.sweepTimer) clearInterval(this.sweepTimer);
  }

  /**
   * The first change to a quiet board is broadcast on the next turn of the event loop; changes while
   * that one is due ride along, and changes within the window after it cost one trailing broadcast.
   */
  leaderboardChanged(benchmarkId: string): void {
    traceMark(`board:${benchmarkId}`, 'changed');
    const due = this.boardBroadcasts.get(benchmarkId);
    if (due) {
      if (!due.immediate) due.pending = true;
      return;
    }
    const state: BoardBroadcast = { pending: false };
    this.boardBroadcasts.set(benchmarkId, state);
    const window = () => {
      state.timer = setTimeout(() => {
        state.timer = undefined;
        if (!state.pending) {
          this.boardBroadcasts.delete(benchmarkId);
          return;
        }
        state.pending = false;
        this.broadcastBoard(benchmarkId);
        window();
      }, LEADERBOARD_COALESCE_MS);
    };
    state.immediate = setImmediate(() => {
      traceMark(`board:${benchmarkId}`, 'immediate');
      state.immediate = undefined;
      this.broadcastBoard(benchmarkId);
      window();
    });
  }

  /**
   * One snapshot (the one REST reads serve), encoded once by socket.io for the whole room: as the
   * places that changed since the last broadcast (`leaderboard.diff`) where that is smaller than the
   * whole board, else the whole board (`leaderboard.update`), versioned by content (boardVersion).
   */
  private broadcastBoard(benchmarkId: string): void {
    this.boards
      .leaderboard(benchmarkId)
      .then((snap) => {
        const trace = `board:${benchmarkId}`;
        traceMark(trace, 'snapshot');
        const room = this.nsp.to(`leaderboard:${benchmarkId}`);
        const prev = this.boardsSent.get(benchmarkId);
        this.boardsSent.set(benchmarkId, snap);
        const version = boardVersion(snap);
        const diff =
          prev && boardVersion(prev) !== version
            ? leaderboardDiff(prev.view, boardVersion(prev), snap.view, version)
            : null;
        traceMark(trace, 'diff');
        const diffBytes = diff ? JSON.stringify(diff).length : 0;
        if (diff && diffBytes < snap.body.length) room.emit('leaderboard.diff', diff);
        else room.emit('leaderboard.update', { leaderboard: snap.view, version });
        traceEnd(trace, 'emitted', {
          diffBytes,
          sockets: this.nsp.adapter.rooms.get(`leaderboard:${benchmarkId}`)?.size,
        });
      })
      .catch((err: unknown) => this.logger.error(`leaderboard ${benchmarkId}: ${(err as Error).message}`));
  }

  private agentsChanged(): void {
    if (this.agentsTimer) return;
    this.agentsTimer = setTimeout(() => {
      this.agentsTimer = undefined;
      this.agents
        .list()
        .then((agents) => this.nsp.to('agents').emit('agents.update', { agents }))
        .catch((err: unknown) => this.logger.error(`agents update: ${(err as Error).message}`));
    }, AGENTS_COALESCE_MS);
  }

  /**
   * Cuts this replica's sockets that `lost` matches out of private rooms, synchronously (no private
   * event can reach them after this returns), and tells each why with `access.revoked`.
   */
  private accessLostHere(lost: AccessLost): void {
    for (const socket of this.nsp.sockets.values()) {
      const principal = socket.data.principal as Principal | null | undefined;
      if (!principal) continue;
      let scope: 'all' | string | null = null;
      if (lost.tokenId) {
        if (principal.tokenId === lost.tokenId) scope = 'all';
      } else if (lost.sessionHash) {
        if (principal.session?.idHash === lost.sessionHash) scope = 'all';
      } else if (lost.userId && lost.teamId && principal.user.id === lost.userId) {
        // A token made by the member who left stops working altogether (token_creator_left).
        if (principal.via === 'token') scope = principal.teamId === lost.teamId ? 'all' : null;
        else scope = lost.teamId;
      }
      if (scope === 'all' && principal.via === 'token' && lost.userId)
        this.cut(socket, 'token_creator_left', null);
      else if (scope !== null) this.cut(socket, lost.reason, scope === 'all' ? null : scope);
    }
  }

  /** Takes the socket out of the private rooms of `teamId` (null: of every team, and drops its identity). */
  private cut(socket: LiveSocket, reason: AccessLostReason, teamId: string | null): void {
    const state = access(socket);
    state.epoch++;
    const runIds = [...state.runTeams].filter(([, t]) => teamId === null || t === teamId).map(([r]) => r);
    const rooms: string[] = [];
    for (const runId of runIds) {
      state.runTeams.delete(runId);
      rooms.push(`run:${runId}`);
      void socket.leave(`run:${runId}`);
      this.channels.evict(socket, runId);
    }
    for (const room of socket.rooms) {
      const isTeam = room.startsWith('team:') && (teamId === null || room === `team:${teamId}`);
      if (isTeam || (teamId === null && room === 'agents')) {
        rooms.push(room);
        void socket.leave(room);
      }
    }
    if (teamId === null) {
      socket.data.principal = null;
      if (state.expiry) clearTimeout(state.expiry);
      state.expiry = undefined;
    }
    const event: AccessRevokedEvent = { reason, message: ACCESS_MESSAGES[reason], teamId, rooms, runIds };
    socket.emit('access.revoked', event);
    this.logger.log(`live ${socket.id}: ${reason}; left ${rooms.length ? rooms.join(', ') : 'no rooms'}`);
  }

  /**
   * The safety net: re-checks every local socket's credential and the memberships behind its private
   * rooms, and cuts what no longer holds. One query per distinct credential and (team, user) per
   * sweep; a failed check (database down) cuts nothing.
   */
  async sweepAccess(): Promise<void> {
    if (this.sweeping) return;
    this.sweeping = true;
    try {
      const credentials = new Map<string, Promise<AccessLostReason | null>>();
      const memberships = new Map<string, Promise<boolean>>();
      for (const socket of [...this.nsp.sockets.values()]) {
        const principal = socket.data.principal as Principal | null | undefined;
        if (!principal || !socket.connected) continue;
        const key = principal.tokenId ?? principal.session?.idHash ?? principal.user.id;
        if (!credentials.has(key))
          credentials.set(
            key,
            this.auth.accessLost(principal).catch(() => null),
          );
        const lost = await credentials.get(key)!;
        if (socket.data.principal !== principal) continue;
        if (lost) {
          this.cut(socket, lost, null);
          continue;
        }
        if (principal.via !== 'session') continue;
        const state = access(socket);
        const teams = new Set([
          ...state.runTeams.values(),
          ...[...socket.rooms].filter((r) => r.startsWith('team:')).map((r) => r.slice('team:'.length)),
        ]);
        for (const teamId of teams) {
          const m = `${teamId}:${principal.user.id}`;
          if (!memberships.has(m))
            memberships.set(
              m,
              this.teams.isMember(teamId, principal.user.id).catch(() => true),
            );
          if (!(await memberships.get(m)!) && socket.data.principal === principal)
            this.cut(socket, 'member_removed', teamId);
        }
      }
    } finally {
      this.sweeping = false;
    }
  }

  /** A session or token with an expiry: the socket loses its private rooms the moment it expires. */
  private armExpiry(socket: LiveSocket, principal: Principal): void {
    if (!principal.expiresAt) return;
    const state = access(socket);
    const at = principal.expiresAt.getTime();
    const fire = () => {
      const left = at - this.clock.now().getTime();
      if (left > 0) {
        state.expiry = setTimeout(fire, Math.min(left, MAX_TIMER_MS));
        return;
      }
      state.expiry = undefined;
      if (socket.data.principal === principal)
        this.cut(socket, principal.via === 'token' ? 'token_expired' : 'session_expired', null);
    };
    fire();
  }

  private onConnection(socket: LiveSocket): void {
    const current = () => (socket.data.principal ?? null) as Principal | null;
    const state = access(socket);
    const initial = current();
    if (initial) this.armExpiry(socket, initial);
    const needSignIn = () =>
      refusal(
        'sign_in_required',
        'Sign in, or connect with auth: { token: "dryft_pat_…" }, to follow runs and teams.',
      );

    this.on(socket, 'run.join', async ({ runId, afterSeq }) => {
      const principal = current();
      if (!principal) return needSignIn();
      const epoch = state.epoch;
      const run = await this.runsRepo.findById(runId).catch(orUnavailable(null));
      const organizer = principal.isAdmin && principal.via === 'session';
      // A baseline re-measure belongs to no team: organizers only.
      const member = run?.teamId ? await this.isMember(principal, run.teamId) : false;
      if (!run || !(organizer || member) || state.epoch !== epoch) {
        return refusal(
          'run_not_found',
          `No run ${runId} in your team; runs and their logs are visible to their team only.`,
        );
      }
      if (run.teamId) state.runTeams.set(runId, run.teamId);
      await socket.join(`run:${runId}`);
      // Read again now that the socket is in the room: a change stored after this read reaches it
      // as a run.status, one stored before is in the ack (the first read was only for access).
      const now = (await this.runsRepo.findById(runId)) ?? run;
      const view = await this.runs.view(now);
      // The ack leaves first; the replay follows on the same socket, so it arrives after it.
      setImmediate(
        () =>
          void this.channels
            .join(socket, runId, afterSeq, () => socket.rooms.has(`run:${runId}`))
            .catch((err: unknown) => this.logger.error(`replay ${runId}: ${(err as Error).stack}`)),
      );
      return { ok: true, run: view };
    });
    this.on(socket, 'run.leave', async ({ runId }) => {
      state.runTeams.delete(runId);
      await socket.leave(`run:${runId}`);
      await this.channels.leave(socket, runId);
      return { ok: true };
    });
    this.on(socket, 'leaderboard.join', async ({ benchmarkId }) => {
      if (!this.registry.get(benchmarkId))
        return refusal('benchmark_not_found', `No benchmark "${benchmarkId}".`);
      await socket.join(`leaderboard:${benchmarkId}`);
      const snap = await this.boards.leaderboard(benchmarkId);
      return { ok: true, leaderboard: snap.view, leaderboardVersion: boardVersion(snap) };
    });
    this.on(socket, 'leaderboard.leave', async ({ benchmarkId }) => {
      await socket.leave(`leaderboard:${benchmarkId}`);
      return { ok: true };
    });
    this.on(socket, 'team.join', async ({ teamId }) => {
      const principal = current();
      if (!principal) return needSignIn();
      const epoch = state.epoch;
      if (!(await this.isMember(principal, teamId)) || state.epoch !== epoch)
        return refusal('team_not_found', 'You are not a member of this team.');
      await socket.join(`team:${teamId}`);
      return { ok: true };
    });
    this.on(socket, 'agents.join', async () => {
      if (!current()?.isAdmin)
        return refusal('organizers_only', 'Only organizers (ADMIN_LOGINS) can watch the agents.');
      await socket.join('agents');
      const agents = await this.agents.list();
      setImmediate(() => socket.emit('agents.update', { agents }));
      return { ok: true };
    });
    answerUnknownEvents(socket, LiveClientToServer, (event) =>
      this.logger.warn(`live client sent unknown event "${event}"; ignored`),
    );
    socket.on('disconnect', () => {
      if (state.expiry) clearTimeout(state.expiry);
      this.channels.forget(socket);
    });
  }

  private async isMember(principal: Principal, teamId: string): Promise<boolean> {
    // A team API token acts for its own team only, whatever else its creator belongs to.
    if (principal.via === 'token') return principal.teamId === teamId;
    return this.teams.isMember(teamId, principal.user.id).catch(orUnavailable(false));
  }

  private on<E extends LiveEvent>(
    socket: LiveSocket,
    event: E,
    handler: (payload: Payload<E>) => Promise<JoinAck>,
  ): void {
    onAcked(socket, event, LiveClientToServer[event] as unknown as z.ZodType<Payload<E>>, {
      empty: {},
      handle: handler,
      malformed: (message) => {
        this.logger.warn(`live client: malformed ${event}: ${message}`);
        return refusal('invalid_request', message);
      },
      failed: (err) => {
        if (isDatabaseUnavailable(err)) {
          const e = databaseUnavailable();
          return refusal(e.code, e.message);
        }
        this.logger.error(`live ${event} failed: ${(err as Error).stack ?? err}`);
        return refusal('internal_error', 'Something went wrong on the server; try again.');
      },
    });
  }
}
