import type { AccessLostReason, AccessRevokedEvent } from '@dryft/libs';
import type { Clock } from '../common/clock';
import { isDatabaseUnavailable } from '../common/database-errors';
import type { Principal } from '../common/principal';
import type { LiveSocket } from '../socket/socket-server';

/** setTimeout's longest delay; a later expiry re-arms the timer. */
const MAX_TIMER_MS = 2 ** 31 - 1;

/**
 * Who lost access to what: every connection matched by `tokenId`, `sessionHash` or (`userId` and
 * `teamId`) leaves the private rooms of `teamId` (a membership ended) or all of them (the credential
 * itself is gone).
 */
export interface AccessLost {
  reason: AccessLostReason;
  tokenId?: string;
  sessionHash?: string;
  userId?: string;
  teamId?: string;
}

export const ACCESS_MESSAGES: Record<AccessLostReason, string> = {
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

/** An access loss as another replica sent it (another version may send other reasons): usable or not. */
export function isAccessLost(lost: unknown): lost is AccessLost {
  const reason = (lost as { reason?: unknown } | null)?.reason;
  return typeof reason === 'string' && Object.prototype.hasOwnProperty.call(ACCESS_MESSAGES, reason);
}

/** Per-socket bookkeeping for revocation: which run rooms belong to which team, and the expiry timer. */
export interface SocketAccess {
  runTeams: Map<string, string>;
  /** Bumped on every revocation, so a join that was being checked meanwhile is undone. */
  epoch: number;
  expiry?: NodeJS.Timeout;
}

/** A lookup's fallback for a bad id, but a database outage is passed on (said as such, not "not found"). */
export const orUnavailable =
  <T>(fallback: T) =>
  (err: unknown): T => {
    if (isDatabaseUnavailable(err)) throw err;
    return fallback;
  };

export interface LiveAccessDeps {
  /** This replica's `/live` sockets. */
  sockets: () => Iterable<LiveSocket>;
  /** Stops the run's replay and live lines to the socket (RunChannels.evict). */
  evict: (socket: LiveSocket, runId: string) => void;
  auth: { accessLost(principal: Principal): Promise<AccessLostReason | null> };
  teams: { isMember(teamId: string, userId: string): Promise<boolean> };
  clock: Clock;
  log: (message: string) => void;
}

/**
 * Who may stay in which private room of `/live` (`run:<id>`, `team:<id>`, `agents`): the checks a
 * join makes, and their undoing. Access ends on an event (a token revoked, a member removed, a
 * sign-out: {@link lostHere}), at the credential's expiry ({@link armExpiry}), or when the periodic
 * {@link sweep} finds it gone; each cut is synchronous and told to the socket as `access.revoked`.
 */
export class LiveAccess {
  private sweeping = false;
  private sweepTimer?: NodeJS.Timeout;

  constructor(private readonly deps: LiveAccessDeps) {}

  /** The socket's bookkeeping, made on first use. */
  state(socket: LiveSocket): SocketAccess {
    const data = socket.data as { access?: SocketAccess };
    data.access ??= { runTeams: new Map(), epoch: 0 };
    return data.access;
  }

  /** Re-checks every socket each `seconds` (the safety net behind the events). */
  startSweeping(seconds: number): void {
    this.sweepTimer = setInterval(() => void this.sweep(), seconds * 1000);
    this.sweepTimer.unref();
  }

  stop(): void {
    if (this.sweepTimer) clearInterval(this.sweepTimer);
  }

  /** A socket left: its expiry timer goes with it. */
  forget(socket: LiveSocket): void {
    const state = this.state(socket);
    if (state.expiry) clearTimeout(state.expiry);
  }

  /** Whether `principal` may see `teamId`'s private rooms. A database outage is passed on. */
  async isMember(principal: Principal, teamId: string): Promise<boolean> {
    // A team API token acts for its own team only, whatever else its creator belongs to.
    if (principal.via === 'token') return principal.teamId === teamId;
    return this.deps.teams.isMember(teamId, principal.user.id).catch(orUnavailable(false));
  }

  /**
   * Cuts this replica's sockets that `lost` matches out of private rooms, synchronously (no private
   * event can reach them after this returns), and tells each why with `access.revoked`.
   */
  lostHere(lost: AccessLost): void {
    for (const socket of this.deps.sockets()) {
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
  cut(socket: LiveSocket, reason: AccessLostReason, teamId: string | null): void {
    const state = this.state(socket);
    state.epoch++;
    const runIds = [...state.runTeams].filter(([, t]) => teamId === null || t === teamId).map(([r]) => r);
    const rooms: string[] = [];
    for (const runId of runIds) {
      state.runTeams.delete(runId);
      rooms.push(`run:${runId}`);
      void socket.leave(`run:${runId}`);
      this.deps.evict(socket, runId);
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
    this.deps.log(`live ${socket.id}: ${reason}; left ${rooms.length ? rooms.join(', ') : 'no rooms'}`);
  }

  /**
   * The safety net: re-checks every local socket's credential and the memberships behind its private
   * rooms, and cuts what no longer holds. One query per distinct credential and (team, user) per
   * sweep; a failed check (database down) cuts nothing.
   */
  async sweep(): Promise<void> {
    if (this.sweeping) return;
    this.sweeping = true;
    try {
      const credentials = new Map<string, Promise<AccessLostReason | null>>();
      const memberships = new Map<string, Promise<boolean>>();
      for (const socket of [...this.deps.sockets()]) {
        const principal = socket.data.principal as Principal | null | undefined;
        if (!principal || !socket.connected) continue;
        const key = principal.tokenId ?? principal.session?.idHash ?? principal.user.id;
        if (!credentials.has(key))
          credentials.set(
            key,
            this.deps.auth.accessLost(principal).catch(() => null),
          );
        const lost = await credentials.get(key)!;
        if (socket.data.principal !== principal) continue;
        if (lost) {
          this.cut(socket, lost, null);
          continue;
        }
        if (principal.via !== 'session') continue;
        const state = this.state(socket);
        const teams = new Set([
          ...state.runTeams.values(),
          ...[...socket.rooms].filter((r) => r.startsWith('team:')).map((r) => r.slice('team:'.length)),
        ]);
        for (const teamId of teams) {
          const m = `${teamId}:${principal.user.id}`;
          if (!memberships.has(m))
            memberships.set(
              m,
              this.deps.teams.isMember(teamId, principal.user.id).catch(() => true),
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
  armExpiry(socket: LiveSocket, principal: Principal): void {
    if (!principal.expiresAt) return;
    const state = this.state(socket);
    const at = principal.expiresAt.getTime();
    const fire = () => {
      const left = at - this.deps.clock.now().getTime();
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
}
