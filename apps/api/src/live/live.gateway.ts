import { Inject, Logger, OnApplicationBootstrap, OnModuleDestroy, UseFilters } from '@nestjs/common';
import {
  ConnectedSocket,
  MessageBody,
  OnGatewayConnection,
  OnGatewayDisconnect,
  OnGatewayInit,
  SubscribeMessage,
  WebSocketGateway,
  WebSocketServer,
} from '@nestjs/websockets';
import { LiveClientToServer, refusal } from '@dryft/libs';
import type { JoinAck } from '@dryft/libs';
import { parse as parseCookies } from 'cookie';
import type { z } from 'zod';
import { AgentEvents } from '../agents/agent-events';
import { AgentsService } from '../agents/agents.service';
import { AuthService, SESSION_COOKIE } from '../auth/auth.service';
import { BenchmarkRegistry } from '../benchmarks/benchmark-registry';
import { Clock } from '../common/clock';
import { EventBus } from '../common/event-bus';
import type { Principal } from '../common/principal';
import { RateLimiter } from '../rate-limits/rate-limiter';
import { CONFIG, Config } from '../config/config';
import { boardVersion, isPublicChange, PublicSnapshots } from '../leaderboards/public-snapshots';
import { RunsRepository } from '../runs/runs.repository';
import { RunLog } from '../runs/run-log';
import { RunViews } from '../runs/run-views';
import { TeamsService } from '../teams/teams.service';
import { BoardBroadcaster } from './board-broadcaster';
import { FleetBroadcaster } from './fleet-broadcaster';
import { NoticeBroadcaster } from './notice-broadcaster';
import { AccessLost, isAccessLost, LiveAccess, orUnavailable } from './live-access';
import { RemoteRunLines } from './remote-run-lines';
import { RunChannels } from './run-channels';
import { REMOTE_ACCESS_LOST, REMOTE_PUBLIC_CHANGED } from '../socket/replica-messages';
import { answerUnknownEvents, authenticatedHandshake } from '../socket/socket-handlers';
import { ZodPayloadPipe } from '../socket/socket-payloads';
import { LiveAckFilter } from './live-ack-filter';
import { LiveNamespace, LiveSocket, SocketServer } from '../socket/socket-server';
import { forRun } from '../common/logging';

type LiveEvent = keyof typeof LiveClientToServer;
type Payload<E extends LiveEvent> = z.infer<(typeof LiveClientToServer)[E]>;

/** The pipe of an event's payload: its schema in the contract; a missing payload is taken as `{}`. */
const body = <E extends LiveEvent>(event: E) =>
  MessageBody(new ZodPayloadPipe(LiveClientToServer[event] as unknown as z.ZodType<Payload<E>>, {}));

const current = (socket: LiveSocket) => (socket.data.principal ?? null) as Principal | null;
const needSignIn = () =>
  refusal(
    'sign_in_required',
    'Sign in, or connect with auth: { token: "dryft_pat_…" }, to follow runs and teams.',
  );

/**
 * The `/live` namespace for browsers and the CLI, and its one writer. The handshake authenticates
 * with the session cookie or `auth.token` (a team API token) through the same AuthService as HTTP; a
 * connection with neither is a spectator and may only join leaderboards. Rooms: `run:<id>` (the
 * run's team only), `leaderboard:<benchmark>` (anyone), `team:<id>` (members), `agents`
 * (organizers). What it sends comes from the domain events, through the parts it owns: RunChannels
 * (run logs), LiveAccess (revocation), BoardBroadcaster (boards), FleetBroadcaster (agents).
 *
 * A Nest gateway on HubIoAdapter: each `@SubscribeMessage` method gets the socket and its payload
 * parsed by the event's zod schema (ZodPayloadPipe), and its answer is the ack; what it throws,
 * a refused payload included, is answered on the ack by LiveAckFilter. An event not in the contract
 * is answered `unknown_event` (handleConnection).
 */
@WebSocketGateway({ namespace: '/live' })
@UseFilters(new LiveAckFilter())
export class LiveGateway
  implements OnGatewayInit, OnGatewayConnection, OnGatewayDisconnect, OnApplicationBootstrap, OnModuleDestroy
{
  private readonly logger = new Logger('LiveGateway');
  /** Set by Nest when it connects the gateway (before afterInit). */
  @WebSocketServer() private nsp!: LiveNamespace;
  private readonly channels: RunChannels;
  readonly access: LiveAccess;
  private readonly board: BoardBroadcaster;
  private readonly fleet: FleetBroadcaster;
  private readonly unsubscribe: (() => void)[] = [];

  constructor(
    private readonly sockets: SocketServer,
    private readonly auth: AuthService,
    teams: TeamsService,
    private readonly runs: RunViews,
    private readonly runsRepo: RunsRepository,
    private readonly runLog: RunLog,
    private readonly boards: PublicSnapshots,
    private readonly registry: BenchmarkRegistry,
    private readonly agents: AgentsService,
    private readonly agentEvents: AgentEvents,
    private readonly bus: EventBus,
    clock: Clock,
    private readonly remoteLines: RemoteRunLines,
    private readonly limiter: RateLimiter,
    @Inject(CONFIG) private readonly config: Config,
  ) {
    const nsp = () => this.nsp;
    const logError = (message: string) => this.logger.error(message);
    this.channels = new RunChannels(
      nsp,
      (runId, after, limit) => this.runLog.read(runId, after, limit),
      this.remoteLines,
    );
    this.access = new LiveAccess({
      sockets: () => this.nsp.sockets.values(),
      evict: (socket, runId) => this.channels.evict(socket, runId),
      auth,
      teams,
      clock,
      log: (message) => this.logger.log(message),
    });
    this.board = new BoardBroadcaster({ boards, nsp, logError });
    this.fleet = new FleetBroadcaster({ agents, nsp, logError });
    this.unsubscribe.push(new NoticeBroadcaster({ bus, nsp }).start());
  }

  /** The handshake, on every connection and reconnection (Nest connects the gateway during app.init). */
  afterInit(nsp: LiveNamespace): void {
    nsp.use(authenticatedHandshake(this.logger, 'live', (socket: LiveSocket) => this.handshake(socket)));
  }

  onApplicationBootstrap(): void {
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
    this.access.startSweeping(this.config.LIVE_ACCESS_SWEEP_SECONDS);

    this.nsp.on(REMOTE_PUBLIC_CHANGED, (change: unknown) => {
      if (isPublicChange(change)) this.board.changedElsewhere(change);
    });
    if (this.sockets.clustered)
      this.boards.crossReplica((change) => this.nsp.serverSideEmit(REMOTE_PUBLIC_CHANGED, change));
    this.nsp.on(REMOTE_ACCESS_LOST, (lost: unknown) => {
      if (isAccessLost(lost)) this.access.lostHere(lost);
    });
    const accessLost = (lost: AccessLost) => {
      this.access.lostHere(lost);
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
      this.bus.on('leaderboard.changed', ({ benchmarkId }) => this.board.changed(benchmarkId)),
      // To every spectator on every replica (the adapter carries a namespace-wide emit).
      this.bus.on('benchmark.clock_changed', ({ clock }) => void this.nsp.emit('benchmark.clock', { clock })),
      this.agentEvents.onChanged(() => this.fleet.changed()),
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
    this.board.stop();
    this.fleet.stop();
    this.access.stop();
  }

  /** Re-checks every socket's access now (the periodic sweep; tests call it). */
  sweepAccess(): Promise<void> {
    return this.access.sweep();
  }

  /** Who connects: the team API token in `auth.token`, else the session cookie, else a spectator (null). */
  async handshake(socket: LiveSocket): Promise<void> {
    await this.limiter.socketAttempt('live', socket.handshake);
    const token = (socket.handshake.auth as { token?: unknown } | undefined)?.token;
    const cookie = parseCookies(socket.handshake.headers.cookie ?? '')[SESSION_COOKIE];
    const creds =
      typeof token === 'string' && token
        ? { authorization: `Bearer ${token}` }
        : cookie
          ? { sessionCookie: cookie }
          : {};
    socket.data.principal = await this.auth.authenticate(creds);
  }

  /** Joins the run's room if it is the caller's team's (or the caller organizes); the log replay follows the ack. */
  @SubscribeMessage('run.join')
  async runJoin(
    @ConnectedSocket() socket: LiveSocket,
    @body('run.join') { runId, afterSeq }: Payload<'run.join'>,
  ): Promise<JoinAck> {
    const principal = current(socket);
    if (!principal) return needSignIn();
    const state = this.access.state(socket);
    const epoch = state.epoch;
    const run = await this.runsRepo.findById(runId).catch(orUnavailable(null));
    const organizer = principal.isAdmin && principal.via === 'session';
    // A baseline re-measure belongs to no team: organizers only.
    const member = run?.teamId ? await this.access.isMember(principal, run.teamId) : false;
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
          .catch((err: unknown) =>
            this.logger.error(`replay ${runId}: ${(err as Error).stack}`, forRun(runId)),
          ),
    );
    return { ok: true, run: view };
  }

  @SubscribeMessage('run.leave')
  async runLeave(
    @ConnectedSocket() socket: LiveSocket,
    @body('run.leave') { runId }: Payload<'run.leave'>,
  ): Promise<JoinAck> {
    this.access.state(socket).runTeams.delete(runId);
    await socket.leave(`run:${runId}`);
    await this.channels.leave(socket, runId);
    return { ok: true };
  }

  /** Anyone, signed in or not, may watch a benchmark's board; the ack carries it and its version. */
  @SubscribeMessage('leaderboard.join')
  async leaderboardJoin(
    @ConnectedSocket() socket: LiveSocket,
    @body('leaderboard.join') { benchmarkId }: Payload<'leaderboard.join'>,
  ): Promise<JoinAck> {
    if (!this.registry.get(benchmarkId))
      return refusal('benchmark_not_found', `No benchmark "${benchmarkId}".`);
    await socket.join(`leaderboard:${benchmarkId}`);
    const snap = await this.boards.leaderboard(benchmarkId);
    return { ok: true, leaderboard: snap.view, leaderboardVersion: boardVersion(snap) };
  }

  @SubscribeMessage('leaderboard.leave')
  async leaderboardLeave(
    @ConnectedSocket() socket: LiveSocket,
    @body('leaderboard.leave') { benchmarkId }: Payload<'leaderboard.leave'>,
  ): Promise<JoinAck> {
    await socket.leave(`leaderboard:${benchmarkId}`);
    return { ok: true };
  }

  @SubscribeMessage('team.join')
  async teamJoin(
    @ConnectedSocket() socket: LiveSocket,
    @body('team.join') { teamId }: Payload<'team.join'>,
  ): Promise<JoinAck> {
    const principal = current(socket);
    if (!principal) return needSignIn();
    const state = this.access.state(socket);
    const epoch = state.epoch;
    if (!(await this.access.isMember(principal, teamId)) || state.epoch !== epoch)
      return refusal('team_not_found', 'You are not a member of this team.');
    await socket.join(`team:${teamId}`);
    return { ok: true };
  }

  /** Organizers only; the fleet follows the ack as `agents.update`. */
  @SubscribeMessage('agents.join')
  async agentsJoin(
    @ConnectedSocket() socket: LiveSocket,
    // Checked like every payload (an object, nothing in it), unused.
    @body('agents.join') _payload?: Payload<'agents.join'>,
  ): Promise<JoinAck> {
    if (!current(socket)?.isAdmin)
      return refusal('organizers_only', 'Only organizers (ADMIN_LOGINS) can watch the agents.');
    await socket.join('agents');
    const agents = await this.agents.list();
    setImmediate(() => socket.emit('agents.update', { agents }));
    return { ok: true };
  }

  /** A socket through the handshake: its credential's expiry is armed; unknown events are answered. */
  handleConnection(socket: LiveSocket): void {
    const initial = current(socket);
    if (initial) this.access.armExpiry(socket, initial);
    answerUnknownEvents(socket, LiveClientToServer, (event) =>
      this.logger.warn(`live client sent unknown event "${event}"; ignored`),
    );
  }

  handleDisconnect(socket: LiveSocket): void {
    this.access.forget(socket);
    this.channels.forget(socket);
  }
}
