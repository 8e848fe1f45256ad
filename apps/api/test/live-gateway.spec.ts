import { describe, expect, it, vi } from 'vitest';
import { LiveClientToServer } from '@dryft/libs';
import type { AgentView, JoinAck } from '@dryft/libs';
import type { AgentEvents } from '../src/agents/agent-events';
import type { AgentsService } from '../src/agents/agents.service';
import type { AuthService } from '../src/auth/auth.service';
import { SESSION_COOKIE } from '../src/auth/auth.service';
import type { BenchmarkRegistry } from '../src/benchmarks/benchmark-registry';
import { Clock } from '../src/common/clock';
import { EventBus } from '../src/common/event-bus';
import type { Principal } from '../src/common/principal';
import type { Config } from '../src/config/config';
import { boardSnapshot, type PublicSnapshots } from '../src/leaderboards/public-snapshots';
import { LiveGateway } from '../src/live/live.gateway';
import type { RemoteRunLines } from '../src/live/remote-run-lines';
import type { RateLimiter } from '../src/rate-limits/rate-limiter';
import type { RunEntity } from '../src/runs/run.entity';
import type { RunsRepository } from '../src/runs/runs.repository';
import type { RunLog } from '../src/runs/run-log';
import type { RunViews } from '../src/runs/run-views';
import type { LiveSocket, SocketServer } from '../src/socket/socket-server';
import type { TeamsService } from '../src/teams/teams.service';
import { aRun, aSession, aTokenPrincipal, aUser } from './builders';
import { bindGateway, subscribedEvents } from './builders/gateway-calls';
import { fakeLive } from './builders/live-sockets';

const BOARD = {
  benchmarkId: 'toy',
  rulesVersion: 1,
  ranks: 'teams' as const,
  entries: [],
  updatedAt: '2026-12-01T00:00:00.000Z',
};

/** The gateway over fakes: one run of team t1, members of t1 only, one benchmark `toy`. */
function world(opts: { runs?: RunEntity[]; databaseDown?: boolean } = {}) {
  const live = fakeLive();
  const runs = new Map((opts.runs ?? []).map((r) => [r.id, r]));
  const creds: unknown[] = [];
  const bus = new EventBus();
  const down = () => Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' });
  const gateway = new LiveGateway(
    { live: live.nsp, clustered: false } as unknown as SocketServer,
    {
      authenticate: async (c: unknown) => (creds.push(c), null),
      accessLost: async () => null,
    } as unknown as AuthService,
    { isMember: async (teamId: string) => teamId === 't1' } as unknown as TeamsService,
    { view: async (r: RunEntity) => ({ id: r.id, status: r.status }) } as unknown as RunViews,
    {
      findById: async (id: string) => {
        if (opts.databaseDown) throw down();
        return runs.get(id) ?? null;
      },
    } as unknown as RunsRepository,
    { read: async () => [] } as unknown as RunLog,
    { leaderboard: async () => boardSnapshot(BOARD) } as unknown as PublicSnapshots,
    { get: (id: string) => (id === 'toy' ? {} : undefined) } as unknown as BenchmarkRegistry,
    { list: async (): Promise<AgentView[]> => [] } as unknown as AgentsService,
    { onChanged: () => () => undefined } as unknown as AgentEvents,
    bus,
    new Clock(),
    {
      watch: async () => undefined,
      unwatch: async () => undefined,
      onLines: () => undefined,
      onReconnected: () => undefined,
    } as unknown as RemoteRunLines,
    { socketAttempt: async () => undefined } as unknown as RateLimiter,
    { LIVE_ACCESS_SWEEP_SECONDS: 60 } as Config,
  );
  (gateway as unknown as { nsp: unknown }).nsp = live.nsp;
  const connect = (principal: Principal | null): LiveSocket => {
    const socket = live.socket({ principal });
    gateway.handleConnection(socket);
    bindGateway(gateway, socket);
    return socket;
  };
  const send = (socket: LiveSocket, event: string, ...args: unknown[]) =>
    live.send(socket, event, ...args) as Promise<JoinAck>;
  return { gateway, live, connect, send, creds, bus };
}

describe('LiveGateway handlers', () => {
  const user = aUser();
  const run = aRun({ teamId: 't1' });

  it("run.join: a member joins the run's room and gets the run; spectators and other teams are refused", async () => {
    const w = world({ runs: [run, aRun({ id: 'other', teamId: 't2' })] });
    const member = w.connect(aSession(user, 't1'));
    expect(await w.send(member, 'run.join', { runId: run.id })).toEqual({
      ok: true,
      run: { id: run.id, status: run.status },
    });
    expect(member.rooms.has(`run:${run.id}`)).toBe(true);

    expect(await w.send(w.connect(null), 'run.join', { runId: run.id })).toMatchObject({
      ok: false,
      error: { code: 'sign_in_required' },
    });
    const stranger = w.connect(aSession(user, 't1'));
    expect(await w.send(stranger, 'run.join', { runId: 'other' })).toMatchObject({
      ok: false,
      error: { code: 'run_not_found' },
    });
    expect(await w.send(stranger, 'run.join', { runId: 'nothing' })).toMatchObject({
      error: { code: 'run_not_found' },
    });
    expect(stranger.rooms.size).toBe(1);
  });

  it('run.join: a team token sees its own team only, whatever its creator belongs to', async () => {
    const w = world({ runs: [run, aRun({ id: 'other', teamId: 't2' })] });
    const token = w.connect(aTokenPrincipal(user, 't2'));
    expect(await w.send(token, 'run.join', { runId: run.id })).toMatchObject({
      error: { code: 'run_not_found' },
    });
    expect(await w.send(token, 'run.join', { runId: 'other' })).toMatchObject({ ok: true });
  });

  it('run.join while the database is down says so, not "not found"', async () => {
    const w = world({ runs: [run], databaseDown: true });
    const ack = await w.send(w.connect(aSession(user, 't1')), 'run.join', { runId: run.id });
    expect(ack).toMatchObject({ ok: false, error: { code: 'database_unavailable' } });
  });

  it('run.leave: leaves the room and forgets the run for revocation', async () => {
    const w = world({ runs: [run] });
    const member = w.connect(aSession(user, 't1'));
    await w.send(member, 'run.join', { runId: run.id });
    expect(await w.send(member, 'run.leave', { runId: run.id })).toEqual({ ok: true });
    expect(member.rooms.has(`run:${run.id}`)).toBe(false);
    expect(w.gateway.access.state(member).runTeams.size).toBe(0);
  });

  it('leaderboard.join: anyone, with the board and its version; an unknown benchmark is refused', async () => {
    const w = world();
    const spectator = w.connect(null);
    const ack = await w.send(spectator, 'leaderboard.join', { benchmarkId: 'toy' });
    expect(ack).toMatchObject({ ok: true, leaderboard: BOARD });
    expect(typeof ack.leaderboardVersion).toBe('string');
    expect(spectator.rooms.has('leaderboard:toy')).toBe(true);
    expect(await w.send(spectator, 'leaderboard.join', { benchmarkId: 'nope' })).toMatchObject({
      error: { code: 'benchmark_not_found' },
    });
    expect(await w.send(spectator, 'leaderboard.leave', { benchmarkId: 'toy' })).toEqual({ ok: true });
    expect(spectator.rooms.has('leaderboard:toy')).toBe(false);
  });

  it('team.join: members only; spectators are asked to sign in', async () => {
    const w = world();
    const member = w.connect(aSession(user, 't1'));
    expect(await w.send(member, 'team.join', { teamId: 't1' })).toEqual({ ok: true });
    expect(await w.send(member, 'team.join', { teamId: 't2' })).toMatchObject({
      error: { code: 'team_not_found' },
    });
    expect(await w.send(w.connect(null), 'team.join', { teamId: 't1' })).toMatchObject({
      error: { code: 'sign_in_required' },
    });
    expect([...member.rooms]).toEqual([member.id, 'team:t1']);
  });

  it('agents.join: organizers only, and the fleet follows the ack', async () => {
    const w = world();
    expect(await w.send(w.connect(aSession(user, 't1')), 'agents.join')).toMatchObject({
      error: { code: 'organizers_only' },
    });
    const organizer = w.connect({ ...aSession(user, null), isAdmin: true });
    expect(await w.send(organizer, 'agents.join')).toEqual({ ok: true });
    await new Promise((r) => setImmediate(r));
    expect(w.live.sent).toContainEqual({
      to: null,
      socket: organizer.id,
      event: 'agents.update',
      payload: { agents: [] },
    });
  });

  it('answers a malformed payload and an unknown event with a refusal, never a throw', async () => {
    const w = world();
    const socket = w.connect(null);
    expect(await w.send(socket, 'leaderboard.join', { benchmarkId: 7 })).toMatchObject({
      ok: false,
      error: { code: 'invalid_request' },
    });
    expect(await w.send(socket, 'run.delete', { runId: 'x' })).toMatchObject({
      ok: false,
      error: { code: 'unknown_event' },
    });
  });

  it('handshake: the team token wins over the cookie; the session cookie is read with the cookie package', async () => {
    const w = world();
    const socket = w.live.socket();
    const handshake = socket.handshake as { auth: unknown; headers: Record<string, string> };
    handshake.headers.cookie = `theme=dark; ${SESSION_COOKIE}=abc%3D%3D; other="x"`;
    await w.gateway.handshake(socket);
    handshake.auth = { token: 'dryft_pat_x' };
    await w.gateway.handshake(socket);
    handshake.auth = {};
    handshake.headers.cookie = 'theme=dark';
    await w.gateway.handshake(socket);
    expect(w.creds).toEqual([{ sessionCookie: 'abc==' }, { authorization: 'Bearer dryft_pat_x' }, {}]);
    expect(socket.data.principal).toBeNull();
  });

  it("broadcasts the round clock's domain event to every spectator, and stops when the module is destroyed", async () => {
    const w = world();
    w.gateway.onApplicationBootstrap();
    const clock = { benchmarkId: 'toy' } as never;
    w.bus.emit('benchmark.clock_changed', { clock });
    await Promise.resolve();
    expect(w.live.sent).toEqual([{ to: '*', event: 'benchmark.clock', payload: { clock } }]);
    w.gateway.onModuleDestroy();
    w.bus.emit('benchmark.clock_changed', { clock });
    await Promise.resolve();
    expect(w.live.sent).toHaveLength(1);
  });

  it('has a handler for every event of the contract, and for nothing else', () => {
    const w = world();
    expect([...subscribedEvents(w.gateway).keys()].sort()).toEqual(Object.keys(LiveClientToServer).sort());
  });

  it('refuses a payload sent with extra arguments, and a missing field, as invalid_request', async () => {
    const w = world({ runs: [run] });
    const member = w.connect(aSession(user, 't1'));
    expect(await w.send(member, 'run.join', { runId: run.id }, 'extra')).toMatchObject({
      ok: false,
      error: {
        code: 'invalid_request',
        message: 'payload: run.join takes one payload (an object) and an ack; it was sent 2 arguments',
      },
    });
    expect(await w.send(member, 'run.join', {})).toMatchObject({
      error: { code: 'invalid_request', message: expect.stringContaining('runId') },
    });
    // No payload at all is taken as {} (agents.join needs none).
    expect(await w.send(member, 'run.join')).toMatchObject({ error: { code: 'invalid_request' } });
    expect(member.rooms.size).toBe(1);
  });

  it("a handler that throws is answered internal_error on the ack; no 'exception' event is sent", async () => {
    const w = world();
    vi.spyOn(w.gateway, 'leaderboardJoin').mockRejectedValueOnce(new Error('boom'));
    const spectator = w.connect(null);
    expect(await w.send(spectator, 'leaderboard.join', { benchmarkId: 'toy' })).toEqual({
      ok: false,
      error: { code: 'internal_error', message: 'Something went wrong on the server; try again.' },
    });
    expect(w.live.sent).toEqual([]);
  });

  it('an answer is the ack, never an event, even with an `event` field', async () => {
    const w = world();
    vi.spyOn(w.gateway, 'leaderboardLeave').mockResolvedValueOnce({ ok: true, event: 'x' } as never);
    const spectator = w.connect(null);
    expect(await w.send(spectator, 'leaderboard.leave', { benchmarkId: 'toy' })).toEqual({
      ok: true,
      event: 'x',
    });
    expect(w.live.sent).toEqual([]);
  });

  it('afterInit installs the handshake: a refused credential is a connect_error with its code', async () => {
    const w = world();
    const used: ((socket: LiveSocket, next: (err?: Error) => void) => void)[] = [];
    w.gateway.afterInit({ use: (m: (typeof used)[0]) => void used.push(m) } as never);
    expect(used).toHaveLength(1);
    const socket = w.live.socket();
    const err = await new Promise<Error | undefined>((resolve) => used[0](socket, resolve));
    expect(err).toBeUndefined();
    expect(socket.data.principal).toBeNull();

    vi.spyOn(w.gateway, 'handshake').mockRejectedValueOnce(
      Object.assign(new Error('db'), { code: 'ECONNREFUSED' }),
    );
    const refused = await new Promise<Error | undefined>((resolve) => used[0](w.live.socket(), resolve));
    expect((refused as Error & { data?: unknown }).data).toEqual({ code: 'database_unavailable' });
  });

  it("handleDisconnect forgets the socket's access and channels", () => {
    const w = world();
    const socket = w.connect(aSession(user, 't1'));
    const forgetAccess = vi.spyOn(w.gateway.access, 'forget');
    w.gateway.handleDisconnect(socket);
    expect(forgetAccess).toHaveBeenCalledWith(socket);
  });
});
