import { describe, expect, it } from 'vitest';
import type { AccessLostReason, AccessRevokedEvent } from '@dryft/libs';
import { Clock } from '../src/common/clock';
import type { Principal } from '../src/common/principal';
import { ACCESS_MESSAGES, isAccessLost, LiveAccess } from '../src/live/live-access';
import type { LiveSocket } from '../src/socket/socket-server';
import { aSession, aTokenPrincipal, aUser } from './builders';
import { fakeLive } from './builders/live-sockets';

class FixedClock extends Clock {
  constructor(public at: number) {
    super();
  }
  override now(): Date {
    return new Date(this.at);
  }
}

function world(opts: { lost?: AccessLostReason | null; member?: boolean; checksFail?: boolean } = {}) {
  const live = fakeLive();
  const evicted: string[] = [];
  const checks = { credentials: 0, memberships: 0 };
  const clock = new FixedClock(Date.parse('2026-12-01T12:00:00Z'));
  const access = new LiveAccess({
    sockets: () => (live.nsp.sockets as Map<string, LiveSocket>).values(),
    evict: (socket, runId) => evicted.push(`${socket.id}:${runId}`),
    auth: {
      accessLost: async () => {
        checks.credentials++;
        if (opts.checksFail) throw new Error('database down');
        return opts.lost ?? null;
      },
    },
    teams: {
      isMember: async () => {
        checks.memberships++;
        if (opts.checksFail) throw new Error('database down');
        return opts.member ?? true;
      },
    },
    clock,
    log: () => undefined,
  });
  /** A connected socket of `principal`, in the rooms of run `run-<team>` and `team:<team>` for each team. */
  const watcher = async (principal: Principal | null, teams: string[]) => {
    const socket = live.socket({ principal });
    for (const t of teams) {
      access.state(socket).runTeams.set(`run-${t}`, t);
      await socket.join(`run:run-${t}`);
      await socket.join(`team:${t}`);
    }
    return socket;
  };
  const revoked = (socket: LiveSocket) =>
    live.sent.filter((s) => s.socket === socket.id && s.event === 'access.revoked') as {
      payload: AccessRevokedEvent;
    }[];
  return { live, access, watcher, evicted, checks, clock, revoked };
}

describe('LiveAccess', () => {
  it('a revoked token: its sockets leave every private room at once, told why; other credentials stay', async () => {
    const w = world();
    const user = aUser();
    const token = aTokenPrincipal(user, 't1');
    const cut = await w.watcher(token, ['t1']);
    await cut.join('agents');
    const other = await w.watcher(aTokenPrincipal(user, 't1'), ['t1']);
    w.access.lostHere({ reason: 'token_revoked', tokenId: token.tokenId });
    expect([...cut.rooms]).toEqual([cut.id]);
    expect(cut.data.principal).toBeNull();
    expect(w.evicted).toEqual([`${cut.id}:run-t1`]);
    expect([...other.rooms]).toContain('team:t1');
    const [event] = w.revoked(cut).map((s) => s.payload);
    expect(event).toEqual({
      reason: 'token_revoked',
      message: ACCESS_MESSAGES.token_revoked,
      teamId: null,
      rooms: ['run:run-t1', 'team:t1', 'agents'],
      runIds: ['run-t1'],
    });
  });

  it("a removed member leaves that team's rooms only, and keeps the identity and other teams", async () => {
    const w = world();
    const user = aUser();
    const socket = await w.watcher(aSession(user, 't1'), ['t1', 't2']);
    w.access.lostHere({ reason: 'member_removed', teamId: 't1', userId: user.id });
    expect([...socket.rooms].sort()).toEqual([socket.id, 'run:run-t2', 'team:t2'].sort());
    expect(socket.data.principal).not.toBeNull();
    expect(w.revoked(socket)[0].payload).toMatchObject({ reason: 'member_removed', teamId: 't1' });
  });

  it("a token made by the member who left stops altogether (token_creator_left); another team's token is untouched", async () => {
    const w = world();
    const user = aUser();
    const mine = await w.watcher(aTokenPrincipal(user, 't1'), ['t1']);
    const elsewhere = await w.watcher(aTokenPrincipal(user, 't2'), ['t2']);
    w.access.lostHere({ reason: 'member_left', teamId: 't1', userId: user.id });
    expect(mine.data.principal).toBeNull();
    expect(w.revoked(mine)[0].payload.reason).toBe('token_creator_left');
    expect([...elsewhere.rooms]).toContain('team:t2');
    expect(w.live.sent.filter((s) => s.event === 'access.revoked')).toHaveLength(1);
  });

  it('undoes a join being checked while access was cut: the epoch moves on every cut', async () => {
    const w = world();
    const user = aUser();
    const socket = await w.watcher(aSession(user, 't1'), []);
    const before = w.access.state(socket).epoch;
    w.access.cut(socket, 'logged_out', null);
    expect(w.access.state(socket).epoch).toBe(before + 1);
  });

  it('the sweep cuts a credential that no longer holds and a membership that ended, one check each', async () => {
    const gone = world({ lost: 'session_expired' });
    const user = aUser();
    const a = await gone.watcher(aSession(user, 't1'), ['t1']);
    const principal = a.data.principal as Principal;
    const b = await gone.watcher(principal, ['t1']); // the same session twice: one check
    await gone.access.sweep();
    expect(gone.checks.credentials).toBe(1);
    expect(a.data.principal).toBeNull();
    expect(b.data.principal).toBeNull();

    const removed = world({ member: false });
    const c = await removed.watcher(aSession(aUser(), 't1'), ['t1']);
    await removed.access.sweep();
    expect([...c.rooms]).toEqual([c.id]);
    expect(removed.revoked(c)[0].payload).toMatchObject({ reason: 'member_removed', teamId: 't1' });
  });

  it('a sweep whose checks fail (database down) cuts nothing', async () => {
    const w = world({ checksFail: true });
    const socket = await w.watcher(aSession(aUser(), 't1'), ['t1']);
    await w.access.sweep();
    expect(w.checks.credentials).toBe(1);
    expect([...socket.rooms]).toContain('team:t1');
    expect(w.live.sent).toHaveLength(0);
  });

  it('an expired session is cut when armed, told session_expired; a live one is not', async () => {
    const w = world();
    const expired = { ...aSession(aUser(), 't1'), expiresAt: new Date(w.clock.at - 1) };
    const socket = await w.watcher(expired, ['t1']);
    w.access.armExpiry(socket, expired);
    expect(w.revoked(socket)[0].payload.reason).toBe('session_expired');

    const fresh = { ...aSession(aUser(), 't1'), expiresAt: new Date(w.clock.at + 60_000) };
    const ok = await w.watcher(fresh, ['t1']);
    w.access.armExpiry(ok, fresh);
    expect(ok.data.principal).toBe(fresh);
    w.access.forget(ok); // the timer goes with the socket
  });

  it('a token acts for its own team only; a session asks the membership', async () => {
    const w = world({ member: false });
    const user = aUser();
    expect(await w.access.isMember(aTokenPrincipal(user, 't1'), 't1')).toBe(true);
    expect(await w.access.isMember(aTokenPrincipal(user, 't1'), 't2')).toBe(false);
    expect(await w.access.isMember(aSession(user, 't1'), 't1')).toBe(false);
    expect(w.checks.memberships).toBe(1);
  });

  it("takes another replica's access loss only with a reason it knows", () => {
    expect(isAccessLost({ reason: 'token_revoked', tokenId: 'x' })).toBe(true);
    expect(isAccessLost({ reason: 'toString' })).toBe(false);
    expect(isAccessLost({ reason: 'wiped_by_a_newer_version' })).toBe(false);
    expect(isAccessLost(null)).toBe(false);
  });
});
