import { Injectable, Logger, OnApplicationBootstrap, OnModuleDestroy } from '@nestjs/common';
import { LiveClientToServer } from '@dryft/libs';
import type { JoinAck, LogLine } from '@dryft/libs';
import type { Namespace, Socket } from 'socket.io';
import type { z } from 'zod';
import { AgentEvents } from '../agents/agent-events';
import { AgentsService } from '../agents/agents.service';
import { AuthService, SESSION_COOKIE } from '../auth/auth.service';
import { BenchmarkRegistry } from '../benchmarks/benchmark-registry';
import { AppError } from '../common/errors';
import { databaseUnavailable, isDatabaseUnavailable } from '../common/database-errors';
import { EventBus } from '../common/event-bus';
import type { Principal } from '../common/principal';
import { LeaderboardsService } from '../leaderboards/leaderboards.service';
import { RunsRepository } from '../runs/runs.repository';
import { RunsService } from '../runs/runs.service';
import { TeamsService } from '../teams/teams.service';
import { RunChannels } from './run-channels';
import { SocketServer } from './socket-server';

type LiveEvent = keyof typeof LiveClientToServer;
type Payload<E extends LiveEvent> = z.infer<(typeof LiveClientToServer)[E]>;

/** Leaderboard changes within this window cost one broadcast. */
/**
 * A burst of leaderboard changes (runs finishing together, a rules bump) within this window costs one
 * read and one broadcast; short enough that a single change still reaches 10,000 spectators within
 * the 300 ms target (bench/RESULTS.md).
 */
export const LEADERBOARD_COALESCE_MS = 50;
const AGENTS_COALESCE_MS = 250;
/** Cross-replica: lines stored on one replica, delivered by every replica to its own watchers. */
const REMOTE_LINES = 'dryft:run.logs';

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

const refusal = (code: string, message: string): JoinAck => ({ ok: false, error: { code, message } });

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
  private nsp!: Namespace;
  private channels!: RunChannels;
  private readonly unsubscribe: (() => void)[] = [];
  private readonly boardTimers = new Map<string, NodeJS.Timeout>();
  private agentsTimer?: NodeJS.Timeout;

  constructor(
    private readonly sockets: SocketServer,
    private readonly auth: AuthService,
    private readonly teams: TeamsService,
    private readonly runs: RunsService,
    private readonly runsRepo: RunsRepository,
    private readonly boards: LeaderboardsService,
    private readonly registry: BenchmarkRegistry,
    private readonly agents: AgentsService,
    private readonly agentEvents: AgentEvents,
    private readonly bus: EventBus,
  ) {}

  onApplicationBootstrap(): void {
    this.nsp = this.sockets.io.of('/live');
    this.channels = new RunChannels(
      () => this.nsp,
      (runId, after, limit) => this.runsRepo.getLogs(runId, after, limit),
    );
    this.nsp.use((socket, next) => {
      const token = (socket.handshake.auth as { token?: unknown } | undefined)?.token;
      const cookie = parseCookies(socket.handshake.headers.cookie)[SESSION_COOKIE];
      const creds =
        typeof token === 'string' && token
          ? { authorization: `Bearer ${token}` }
          : cookie
            ? { sessionCookie: cookie }
            : {};
      this.auth
        .authenticate(creds)
        .then((principal) => {
          socket.data.principal = principal;
          next();
        })
        .catch((err: unknown) => {
          // The database being down is said as such, never as an authentication failure.
          const e = err instanceof AppError ? err : isDatabaseUnavailable(err) ? databaseUnavailable() : null;
          if (!e) this.logger.error(`live handshake failed: ${(err as Error).stack ?? err}`);
          const refused = new Error(e?.message ?? 'Authentication failed.') as Error & { data?: unknown };
          refused.data = { code: e?.code ?? 'internal_error' };
          next(refused);
        });
    });
    this.nsp.on('connection', (socket) => this.onConnection(socket));
    this.nsp.on(REMOTE_LINES, (payload: { runId: string; lines: LogLine[] }) => {
      if (payload && typeof payload.runId === 'string' && Array.isArray(payload.lines))
        void this.channels.deliver(payload.runId, payload.lines);
    });

    const toRun = (runId: string, event: string, payload: unknown): void => {
      this.nsp.to(`run:${runId}`).emit(event, payload);
    };
    this.unsubscribe.push(
      this.bus.on('run.logs', ({ runId, lines }) => {
        void this.channels.deliver(runId, lines);
        if (this.sockets.clustered) this.nsp.serverSideEmit(REMOTE_LINES, { runId, lines });
      }),
      this.bus.on('run.status', ({ run }) => {
        this.nsp.to(`run:${run.id}`).emit('run.status', { run });
        this.nsp.to(`team:${run.teamId}`).emit('team.run', { run });
      }),
      this.bus.on('run.sample', (p) => toRun(p.runId, 'run.sample', p)),
      this.bus.on('run.check', (p) => toRun(p.runId, 'run.check', p)),
      this.bus.on('run.metric', (p) => toRun(p.runId, 'run.metric', p)),
      this.bus.on('run.result', (p) => toRun(p.runId, 'run.result', p)),
      this.bus.on('leaderboard.changed', ({ benchmarkId }) => this.leaderboardChanged(benchmarkId)),
      this.agentEvents.onChanged(() => this.agentsChanged()),
    );
  }

  onModuleDestroy(): void {
    for (const u of this.unsubscribe) u();
    for (const t of this.boardTimers.values()) clearTimeout(t);
    if (this.agentsTimer) clearTimeout(this.agentsTimer);
  }

  /** A burst of changes to one board costs one read and one broadcast, at the end of the window. */
  leaderboardChanged(benchmarkId: string): void {
    if (this.boardTimers.has(benchmarkId)) return;
    const timer = setTimeout(() => {
      this.boardTimers.delete(benchmarkId);
      this.boards
        .get(benchmarkId)
        .then((leaderboard) =>
          this.nsp.to(`leaderboard:${benchmarkId}`).emit('leaderboard.update', { leaderboard }),
        )
        .catch((err: unknown) => this.logger.error(`leaderboard ${benchmarkId}: ${(err as Error).message}`));
    }, LEADERBOARD_COALESCE_MS);
    this.boardTimers.set(benchmarkId, timer);
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

  private onConnection(socket: Socket): void {
    const principal = (socket.data.principal ?? null) as Principal | null;
    const needSignIn = () =>
      refusal(
        'sign_in_required',
        'Sign in, or connect with auth: { token: "dryft_pat_…" }, to follow runs and teams.',
      );

    this.on(socket, 'run.join', async ({ runId, afterSeq }) => {
      if (!principal) return needSignIn();
      const run = await this.runsRepo.findById(runId).catch(orUnavailable(null));
      if (!run || !(await this.isMember(principal, run.teamId))) {
        return refusal(
          'run_not_found',
          `No run ${runId} in your team; runs and their logs are visible to their team only.`,
        );
      }
      await socket.join(`run:${runId}`);
      const view = await this.runs.view(run);
      // The ack leaves first; the replay follows on the same socket, so it arrives after it.
      setImmediate(
        () =>
          void this.channels
            .join(socket, runId, afterSeq)
            .catch((err: unknown) => this.logger.error(`replay ${runId}: ${(err as Error).stack}`)),
      );
      return { ok: true, run: view };
    });
    this.on(socket, 'run.leave', async ({ runId }) => {
      await socket.leave(`run:${runId}`);
      await this.channels.leave(socket, runId);
      return { ok: true };
    });
    this.on(socket, 'leaderboard.join', async ({ benchmarkId }) => {
      if (!this.registry.get(benchmarkId))
        return refusal('benchmark_not_found', `No benchmark "${benchmarkId}".`);
      await socket.join(`leaderboard:${benchmarkId}`);
      return { ok: true, leaderboard: await this.boards.get(benchmarkId) };
    });
    this.on(socket, 'leaderboard.leave', async ({ benchmarkId }) => {
      await socket.leave(`leaderboard:${benchmarkId}`);
      return { ok: true };
    });
    this.on(socket, 'team.join', async ({ teamId }) => {
      if (!principal) return needSignIn();
      if (!(await this.isMember(principal, teamId)))
        return refusal('team_not_found', 'You are not a member of this team.');
      await socket.join(`team:${teamId}`);
      return { ok: true };
    });
    this.on(socket, 'agents.join', async () => {
      if (!principal?.isAdmin)
        return refusal('organizers_only', 'Only organizers (ADMIN_LOGINS) can watch the agents.');
      await socket.join('agents');
      const agents = await this.agents.list();
      setImmediate(() => socket.emit('agents.update', { agents }));
      return { ok: true };
    });
    socket.onAny((event: string, ...args: unknown[]) => {
      if (event in LiveClientToServer) return;
      this.logger.warn(`live client sent unknown event "${event}"; ignored`);
      const ack = args[args.length - 1];
      if (typeof ack === 'function')
        (ack as (r: JoinAck) => void)(refusal('unknown_event', `Unknown event "${event}".`));
    });
    socket.on('disconnect', () => this.channels.forget(socket));
  }

  private async isMember(principal: Principal, teamId: string): Promise<boolean> {
    // A team API token acts for its own team only, whatever else its creator belongs to.
    if (principal.via === 'token') return principal.teamId === teamId;
    return this.teams.isMember(teamId, principal.user.id).catch(orUnavailable(false));
  }

  private on<E extends LiveEvent>(
    socket: Socket,
    event: E,
    handler: (payload: Payload<E>) => Promise<JoinAck>,
  ): void {
    const schema = LiveClientToServer[event];
    socket.on(event as string, (raw: unknown, ack?: unknown) => {
      const reply = typeof ack === 'function' ? (ack as (r: JoinAck) => void) : () => undefined;
      const parsed = schema.safeParse(raw ?? {});
      if (!parsed.success) {
        const message = parsed.error.issues
          .map((i) => `${i.path.join('.') || 'payload'}: ${i.message}`)
          .join('; ');
        this.logger.warn(`live client: malformed ${event}: ${message}`);
        reply(refusal('invalid_request', message));
        return;
      }
      handler(parsed.data as Payload<E>).then(reply, (err: unknown) => {
        if (isDatabaseUnavailable(err)) {
          const e = databaseUnavailable();
          reply(refusal(e.code, e.message));
          return;
        }
        this.logger.error(`live ${event} failed: ${(err as Error).stack ?? err}`);
        reply(refusal('internal_error', 'Something went wrong on the server; try again.'));
      });
    });
  }
}
