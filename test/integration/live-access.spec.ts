import { io, Socket } from 'socket.io-client';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { AccessRevokedEvent, LogLine } from '@dryft/libs';
import type { Hub } from '../../apps/api/src/bootstrap';
import { EventBus } from '../../apps/api/src/common/event-bus';
import { HttpUser, toyStarter, until } from '../support/agent-helpers';
import { startSecondReplica, startTestHub, TestHub } from '../support/hub';
import { hasRedis } from '../support/prerequisites';
import { TestAgent } from '../support/test-agent';

/**
 * Losing access cuts live streams (issue 14, item 3): after a token revoke, a member's removal, a
 * member leaving, a logout or a session expiry, the watcher that lost access gets no further private
 * line (measured: the last one arrives before the cut is announced) and is told why with
 * `access.revoked`; a watcher that is still allowed keeps getting every line.
 */

/** A /live client that records every line and the moment it arrived. */
class Watcher {
  readonly socket: Socket;
  readonly lines: { seq: number; at: number }[] = [];
  revoked?: AccessRevokedEvent & { at: number };
  boards = 0;

  constructor(url: string, auth: { cookie?: string; token?: string }) {
    this.socket = io(`${url}/live`, {
      transports: ['websocket'],
      forceNew: true,
      extraHeaders: auth.cookie ? { cookie: auth.cookie } : undefined,
      auth: auth.token ? { token: auth.token } : {},
      reconnection: false,
    });
    this.socket.on('run.log', (e: { lines: LogLine[] }) => {
      const at = Date.now();
      for (const l of e.lines) this.lines.push({ seq: l.seq, at });
    });
    this.socket.on('access.revoked', (e: AccessRevokedEvent) => (this.revoked = { ...e, at: Date.now() }));
    this.socket.on('leaderboard.update', () => this.boards++);
    this.socket.on('leaderboard.diff', () => this.boards++);
  }

  async join(runId: string, teamId?: string): Promise<void> {
    if (!this.socket.connected)
      await new Promise<void>((resolve, reject) => {
        this.socket.once('connect', () => resolve());
        this.socket.once('connect_error', reject);
      });
    const ack = await this.socket.timeout(10_000).emitWithAck('run.join', { runId, afterSeq: 0 });
    if (!ack.ok) throw new Error(`run.join refused: ${JSON.stringify(ack)}`);
    if (teamId) expect((await this.socket.emitWithAck('team.join', { teamId })).ok).toBe(true);
    expect((await this.socket.emitWithAck('leaderboard.join', { benchmarkId: 'toy-decode' })).ok).toBe(true);
  }

  get lastLineAt(): number {
    return this.lines.length ? this.lines[this.lines.length - 1].at : 0;
  }
}

/** Streams lines into the run until stopped, like an engine printing without pause. */
function stream(agent: TestAgent, runId: string): { stop: () => Promise<number> } {
  let running = true;
  let n = 0;
  const loop = (async () => {
    while (running) {
      await agent.log(runId, ...Array.from({ length: 5 }, () => `line ${++n}`));
      await new Promise((r) => setTimeout(r, 5));
    }
  })();
  return {
    stop: async () => {
      running = false;
      await loop;
      return n;
    },
  };
}

/**
 * One fault: both watchers follow the streaming run; `cut` takes access from `loser`; lines keep
 * coming for 1.5 s more. Returns how long after the cut began the loser's last line and the
 * notice arrived.
 */
async function cutUnderStream(opts: {
  hub: Hub;
  agent: TestAgent;
  runId: string;
  loser: Watcher;
  keeper: Watcher;
  /** Takes access away; resolves with the moment it was lost when that is not the call itself. */
  cut: () => Promise<number | void>;
}): Promise<{ lastLineMs: number; noticeMs: number; linesAfter: number }> {
  const { agent, runId, loser, keeper } = opts;
  const writer = stream(agent, runId);
  await until('lines flowing to both', () => loser.lines.length > 50 && keeper.lines.length > 50, 15_000);
  const started = Date.now();
  const t0 = (await opts.cut()) ?? started;
  await until('the notice', () => loser.revoked, 5_000);
  const seenAtNotice = keeper.lines.length;
  await new Promise((r) => setTimeout(r, 1_500));
  const written = await writer.stop();
  expect(written).toBeGreaterThan(0);
  // The still-allowed watcher kept getting lines after the cut, and every line exactly once.
  expect(keeper.lines.length).toBeGreaterThan(seenAtNotice);
  const stored = (
    await opts.hub.dataSource.query(
      'SELECT coalesce(sum(line_count), 0)::int AS n FROM run_log_chunks WHERE run_id = $1',
      [runId],
    )
  )[0].n as number;
  await until('the keeper caught up', () => keeper.lines.length >= stored, 10_000);
  expect(keeper.lines.map((l) => l.seq)).toEqual(Array.from({ length: stored }, (_, i) => i + 1));
  const revoked = loser.revoked!;
  return {
    lastLineMs: loser.lastLineAt - t0,
    noticeMs: revoked.at - t0,
    linesAfter: loser.lines.filter((l) => l.at > revoked.at).length,
  };
}

const measured: Record<string, { lastLineMs: number; noticeMs: number }> = {};
afterAll(() =>
  console.log(
    `access cut, ms after access was lost (last private line / notice): ${JSON.stringify(measured)}`,
  ),
);

describe('/live: losing access cuts live streams', () => {
  let hub: TestHub;
  let owner: HttpUser;
  let teamId: string;
  let inviteCode: string;
  let runId: string;
  let agent: TestAgent;
  let keeper: Watcher;

  const member = async (login: string): Promise<HttpUser & { id: string }> => {
    const u = await HttpUser.signIn(hub.baseUrl, login);
    const joined = await u.post('/api/teams/join', { code: inviteCode });
    expect(joined.status).toBe(200);
    const me = await u.get('/api/me');
    return Object.assign(u, { id: me.body.user.id as string });
  };

  beforeAll(async () => {
    hub = await startTestHub();
    owner = await HttpUser.signIn(hub.baseUrl, 'cut-owner');
    teamId = (await owner.createTeam()).id;
    inviteCode = (await owner.get(`/api/teams/${teamId}`)).body.inviteCode;
    runId = (await owner.startRun(await owner.upload(await toyStarter()))).id;
    agent = new TestAgent(hub);
    await agent.claim(runId);
    keeper = new Watcher(hub.baseUrl, { cookie: owner.cookie });
    await keeper.join(runId, teamId);
  });
  afterAll(async () => {
    keeper?.socket.close();
    await hub?.close();
  });

  it('a revoked team API token: its sockets stop within 1 s and are told token_revoked', async () => {
    const created = await owner.post(`/api/teams/${teamId}/tokens`, { name: 'watcher' });
    expect(created.status).toBe(201);
    const loser = new Watcher(hub.baseUrl, { token: created.body.token });
    await loser.join(runId, teamId);
    const m = await cutUnderStream({
      hub,
      agent,
      runId,
      loser,
      keeper,
      cut: async () => {
        expect((await owner.delete(`/api/teams/${teamId}/tokens/${created.body.id}`)).status).toBe(200);
      },
    });
    measured.token_revoked = m;
    expect(m.linesAfter).toBe(0);
    expect(m.lastLineMs).toBeLessThan(1_000);
    expect(m.noticeMs).toBeLessThan(1_000);
    expect(loser.revoked).toMatchObject({ reason: 'token_revoked', teamId: null, runIds: [runId] });
    expect(loser.revoked!.rooms).toEqual(expect.arrayContaining([`run:${runId}`, `team:${teamId}`]));
    expect(loser.revoked!.message).toMatch(/revoked/);
    // The public leaderboard stays; private rooms cannot be joined again on this connection.
    const boards = loser.boards;
    hub.app.get(EventBus).emit('leaderboard.changed', { benchmarkId: 'toy-decode' });
    await until('leaderboard still delivered', () => loser.boards > boards, 5_000);
    expect((await loser.socket.emitWithAck('run.join', { runId, afterSeq: 0 })).error.code).toBe(
      'sign_in_required',
    );
    loser.socket.close();
  });

  it('a removed member: their sockets leave the team rooms within 1 s, told member_removed', async () => {
    const m1 = await member('cut-removed');
    const loser = new Watcher(hub.baseUrl, { cookie: m1.cookie });
    await loser.join(runId, teamId);
    const m = await cutUnderStream({
      hub,
      agent,
      runId,
      loser,
      keeper,
      cut: async () => {
        expect((await owner.delete(`/api/teams/${teamId}/members/${m1.id}`)).status).toBe(200);
      },
    });
    measured.member_removed = m;
    expect(m.linesAfter).toBe(0);
    expect(m.lastLineMs).toBeLessThan(1_000);
    expect(m.noticeMs).toBeLessThan(1_000);
    expect(loser.revoked).toMatchObject({ reason: 'member_removed', teamId, runIds: [runId] });
    expect(loser.revoked!.rooms.sort()).toEqual([`run:${runId}`, `team:${teamId}`].sort());
    expect((await loser.socket.emitWithAck('run.join', { runId, afterSeq: 0 })).error.code).toBe(
      'run_not_found',
    );
    loser.socket.close();
  });

  it('a member who leaves: their sockets leave the team rooms within 1 s, told member_left', async () => {
    const m2 = await member('cut-leaver');
    const loser = new Watcher(hub.baseUrl, { cookie: m2.cookie });
    await loser.join(runId, teamId);
    const m = await cutUnderStream({
      hub,
      agent,
      runId,
      loser,
      keeper,
      cut: async () => {
        expect((await m2.post(`/api/teams/${teamId}/leave`, {})).status).toBe(200);
      },
    });
    measured.member_left = m;
    expect(m.linesAfter).toBe(0);
    expect(m.lastLineMs).toBeLessThan(1_000);
    expect(loser.revoked).toMatchObject({ reason: 'member_left', teamId, runIds: [runId] });
    loser.socket.close();
  });

  it('a logout: the session’s sockets stop within 1 s, told logged_out; other sessions of the team go on', async () => {
    const m3 = await member('cut-logout');
    const loser = new Watcher(hub.baseUrl, { cookie: m3.cookie });
    await loser.join(runId, teamId);
    const m = await cutUnderStream({
      hub,
      agent,
      runId,
      loser,
      keeper,
      cut: async () => {
        expect((await m3.post('/api/auth/logout', {})).status).toBeLessThan(300);
      },
    });
    measured.logged_out = m;
    expect(m.linesAfter).toBe(0);
    expect(m.lastLineMs).toBeLessThan(1_000);
    expect(loser.revoked).toMatchObject({ reason: 'logged_out', teamId: null, runIds: [runId] });
    expect(loser.socket.connected).toBe(true);
    loser.socket.close();
  });
});

describe('/live: the periodic re-check cuts what a lost message would have missed', () => {
  let hub: TestHub;
  beforeAll(async () => {
    hub = await startTestHub({ env: { LIVE_ACCESS_SWEEP_SECONDS: '0.3' } });
  });
  afterAll(async () => hub?.close());

  it('a token revoked, a membership or a session deleted behind the API: cut at the next sweep, with the reason', async () => {
    const owner = await HttpUser.signIn(hub.baseUrl, 'sweep-owner');
    const teamId = (await owner.createTeam()).id;
    const inviteCode = (await owner.get(`/api/teams/${teamId}`)).body.inviteCode as string;
    const runId = (await owner.startRun(await owner.upload(await toyStarter()))).id;
    const agent = new TestAgent(hub);
    await agent.claim(runId);
    await agent.log(runId, 'one', 'two');
    const member = async (login: string) => {
      const u = await HttpUser.signIn(hub.baseUrl, login);
      expect((await u.post('/api/teams/join', { code: inviteCode })).status).toBe(200);
      return Object.assign(u, { id: (await u.get('/api/me')).body.user.id as string });
    };
    const token = (await owner.post(`/api/teams/${teamId}/tokens`, { name: 'sweep' })).body as {
      id: string;
      token: string;
    };
    const viaToken = new Watcher(hub.baseUrl, { token: token.token });
    const removed = await member('sweep-removed');
    const viaMember = new Watcher(hub.baseUrl, { cookie: removed.cookie });
    const loggedOut = await member('sweep-logged-out');
    const viaSession = new Watcher(hub.baseUrl, { cookie: loggedOut.cookie });
    const keeper = new Watcher(hub.baseUrl, { cookie: owner.cookie });
    for (const w of [viaToken, viaMember, viaSession, keeper]) await w.join(runId, teamId);

    // Straight in the database, as if the instant cut's message never reached this replica.
    await hub.dataSource.query('UPDATE api_tokens SET revoked_at = now() WHERE id = $1', [token.id]);
    await hub.dataSource.query('DELETE FROM memberships WHERE team_id = $1 AND user_id = $2', [
      teamId,
      removed.id,
    ]);
    await hub.dataSource.query('DELETE FROM sessions WHERE user_id = $1', [loggedOut.id]);
    await until('all three cut', () => viaToken.revoked && viaMember.revoked && viaSession.revoked, 5_000);
    expect(viaToken.revoked).toMatchObject({ reason: 'token_revoked', teamId: null, runIds: [runId] });
    expect(viaMember.revoked).toMatchObject({ reason: 'member_removed', teamId, runIds: [runId] });
    expect(viaSession.revoked).toMatchObject({ reason: 'logged_out', teamId: null, runIds: [runId] });
    expect(keeper.revoked).toBeUndefined();
    // Only the keeper hears the next lines.
    await agent.log(runId, 'three');
    await until('the keeper got line 3', () => keeper.lines.length >= 3, 5_000);
    await new Promise((r) => setTimeout(r, 300));
    for (const w of [viaToken, viaMember, viaSession]) expect(w.lines.map((l) => l.seq)).toEqual([1, 2]);
    for (const w of [viaToken, viaMember, viaSession, keeper]) w.socket.close();
  });

  it('a token whose creator is removed stops at once, told token_creator_left', async () => {
    const owner = await HttpUser.signIn(hub.baseUrl, 'creator-owner');
    const teamId = (await owner.createTeam()).id;
    const inviteCode = (await owner.get(`/api/teams/${teamId}`)).body.inviteCode as string;
    const runId = (await owner.startRun(await owner.upload(await toyStarter()))).id;
    const admin = await HttpUser.signIn(hub.baseUrl, 'creator-admin');
    expect((await admin.post('/api/teams/join', { code: inviteCode })).status).toBe(200);
    const adminId = (await admin.get('/api/me')).body.user.id as string;
    expect(
      (await owner.req('PATCH', `/api/teams/${teamId}/members/${adminId}`, { role: 'admin' })).status,
    ).toBe(200);
    const token = (await admin.post(`/api/teams/${teamId}/tokens`, { name: 'by-admin' })).body
      .token as string;
    const w = new Watcher(hub.baseUrl, { token });
    await w.join(runId, teamId);
    expect((await owner.delete(`/api/teams/${teamId}/members/${adminId}`)).status).toBe(200);
    await until('the notice', () => w.revoked, 2_000);
    expect(w.revoked).toMatchObject({ reason: 'token_creator_left', teamId: null, runIds: [runId] });
    w.socket.close();
  });
});

describe('/live: a session that expires is cut at its expiry', () => {
  let hub: TestHub;
  const TTL_S = 6;

  beforeAll(async () => {
    hub = await startTestHub({ env: { SESSION_TTL_HOURS: String(TTL_S / 3600) } });
  });
  afterAll(async () => hub?.close());

  it('the watcher stops getting lines within 1 s of its session expiring and is told session_expired', async () => {
    const owner = await HttpUser.signIn(hub.baseUrl, 'exp-owner');
    const teamId = (await owner.createTeam()).id;
    const token = (await owner.post(`/api/teams/${teamId}/tokens`, { name: 'keeper' })).body.token as string;
    const runId = (await owner.startRun(await owner.upload(await toyStarter()))).id;
    const agent = new TestAgent(hub);
    await agent.claim(runId);
    const loser = new Watcher(hub.baseUrl, { cookie: owner.cookie });
    await loser.join(runId, teamId);
    const keeper = new Watcher(hub.baseUrl, { token });
    await keeper.join(runId, teamId);
    const me = await owner.get('/api/me');
    expect(me.status).toBe(200);
    const session = (
      await hub.dataSource.query('SELECT expires_at FROM sessions ORDER BY created_at DESC LIMIT 1')
    )[0] as { expires_at: Date };
    const expiresAt = new Date(session.expires_at).getTime();
    const m = await cutUnderStream({
      hub,
      agent,
      runId,
      loser,
      keeper,
      cut: async () => {
        await new Promise((r) => setTimeout(r, Math.max(0, expiresAt - Date.now())));
        return expiresAt;
      },
    });
    measured.session_expired = m;
    expect(m.linesAfter).toBe(0);
    expect(m.lastLineMs).toBeLessThan(1_000);
    expect(m.noticeMs).toBeLessThan(1_000);
    expect(loser.revoked).toMatchObject({ reason: 'session_expired', teamId: null, runIds: [runId] });
    loser.socket.close();
    keeper.socket.close();
  });
});

const redisUrl = inject('redisUrl');
const reachable = await hasRedis(redisUrl);

describe.skipIf(!reachable)('/live across replicas: a revoke on one replica cuts watchers on another', () => {
  let a: TestHub;
  let b: Hub & { baseUrl: string };

  beforeAll(async () => {
    const env = { REDIS_URL: redisUrl, REDIS_STREAM: `cut-${process.pid}-${Date.now()}` };
    a = await startTestHub({ env });
    b = await startSecondReplica(a, env);
  });
  afterAll(async () => {
    await b?.close();
    await a?.close();
  });

  it('a token revoked through replica A cuts its watcher on replica B within 1 s', async () => {
    const owner = await HttpUser.signIn(a.baseUrl, 'cut-replica-owner');
    const teamId = (await owner.createTeam()).id;
    const created = (await owner.post(`/api/teams/${teamId}/tokens`, { name: 'on-b' })).body;
    const runId = (await owner.startRun(await owner.upload(await toyStarter()))).id;
    const agent = new TestAgent(a);
    await agent.claim(runId);
    const loser = new Watcher(b.baseUrl, { token: created.token });
    await loser.join(runId, teamId);
    const keeper = new Watcher(b.baseUrl, { cookie: owner.cookie });
    await keeper.join(runId, teamId);
    const m = await cutUnderStream({
      hub: a,
      agent,
      runId,
      loser,
      keeper,
      cut: async () => {
        expect((await owner.delete(`/api/teams/${teamId}/tokens/${created.id}`)).status).toBe(200);
      },
    });
    measured.token_revoked_other_replica = m;
    expect(m.linesAfter).toBe(0);
    expect(m.lastLineMs).toBeLessThan(1_000);
    expect(m.noticeMs).toBeLessThan(1_000);
    expect(loser.revoked).toMatchObject({ reason: 'token_revoked', teamId: null });
    loser.socket.close();
    keeper.socket.close();
  });
});

describe('/agents: a revoked agent is told why, then disconnected', () => {
  let hub: TestHub;
  afterAll(async () => hub?.close());

  it('gets agent.revoked with the reason, then the server disconnects it, within 1 s', async () => {
    hub = await startTestHub({ env: { ADMIN_LOGINS: 'cut-org' } });
    const org = await HttpUser.signIn(hub.baseUrl, 'cut-org');
    const { id, token } = await org.createAgent('cut-box');
    const socket = io(`${hub.baseUrl}/agents`, {
      auth: { token },
      transports: ['websocket'],
      forceNew: true,
      reconnection: false,
    });
    const events: string[] = [];
    let reason: { code: string; reason: string } | undefined;
    socket.on('agent.revoked', (e: { code: string; reason: string }) => {
      reason = e;
      events.push('agent.revoked');
    });
    const gone = new Promise<string>((resolve) =>
      socket.on('disconnect', (why) => {
        events.push(`disconnect:${why}`);
        resolve(why);
      }),
    );
    await new Promise<void>((resolve, reject) => {
      socket.once('connect', () => resolve());
      socket.once('connect_error', reject);
    });
    const t0 = Date.now();
    expect((await org.delete(`/api/admin/agents/${id}`)).status).toBe(200);
    expect(await gone).toBe('io server disconnect');
    measured.agent_revoked = { lastLineMs: Date.now() - t0, noticeMs: Date.now() - t0 };
    expect(Date.now() - t0).toBeLessThan(1_000);
    expect(events).toEqual(['agent.revoked', 'disconnect:io server disconnect']);
    expect(reason).toMatchObject({ code: 'agent_revoked' });
    expect(reason!.reason).toMatch(/revoked this agent token/);
  });
});
