import { Inject, Injectable, OnModuleInit } from '@nestjs/common';
import { createHash, randomBytes } from 'node:crypto';
import type { AccessLostReason, MeView } from '@dryft/libs';
import { Clock } from '../common/clock';
import { EventBus } from '../common/event-bus';
import { badRequest, notFound, unauthorized } from '../common/errors';
import type { Principal } from '../common/principal';
import { CONFIG, Config } from '../config/config';
import { TeamsService } from '../teams/teams.service';
import { TokensService } from '../tokens/tokens.service';
import { UserEntity } from '../users/user.entity';
import { UsersService } from '../users/users.service';
import { SessionsRepository } from './sessions.repository';

export const SESSION_COOKIE = 'dryft_session';
export const CSRF_COOKIE = 'dryft_csrf';
export const CSRF_HEADER = 'x-csrf-token';

export interface Credentials {
  authorization?: string;
  sessionCookie?: string;
}

const sha256 = (value: string) => createHash('sha256').update(value).digest('hex');

@Injectable()
export class AuthService implements OnModuleInit {
  constructor(
    private readonly sessions: SessionsRepository,
    private readonly users: UsersService,
    private readonly teams: TeamsService,
    private readonly tokens: TokensService,
    private readonly clock: Clock,
    private readonly bus: EventBus,
    @Inject(CONFIG) private readonly config: Config,
  ) {}

  onModuleInit(): void {
    const clear = ({ teamId, userId }: { teamId: string; userId: string }) =>
      this.sessions.clearActiveTeamForUser(userId, teamId);
    this.bus.on('team.member_left', clear);
    this.bus.on('team.member_removed', clear);
  }

  get devSignInEnabled(): boolean {
    return !this.config.isProduction && !this.config.githubOAuthConfigured;
  }

  /**
   * One authentication for HTTP and both socket namespaces. Null means "no credentials"; a bad
   * credential throws, so a broken token is never silently treated as signed out.
   */
  async authenticate(creds: Credentials): Promise<Principal | null> {
    if (creds.authorization) {
      const match = /^Bearer\s+(\S+)\s*$/i.exec(creds.authorization);
      if (!match)
        throw unauthorized('bad_authorization', 'Send the token as "Authorization: Bearer dryft_pat_…".');
      return this.tokens.authenticate(match[1]);
    }
    if (creds.sessionCookie) {
      const session = await this.sessions.findByHash(sha256(creds.sessionCookie));
      if (!session || session.expiresAt.getTime() <= this.clock.now().getTime()) return null;
      const user = await this.users.findById(session.userId);
      if (!user) return null;
      return {
        user,
        isAdmin: this.users.isAdmin(user),
        via: 'session',
        teamId: await this.activeTeam(session.activeTeamId, user.id),
        session,
        expiresAt: session.expiresAt,
      };
    }
    return null;
  }

  /**
   * Why a principal that authenticated earlier (an open socket) no longer may act, or null while it
   * still may: its session was ended or expired, or its token was revoked, expired or orphaned.
   */
  async accessLost(principal: Principal): Promise<AccessLostReason | null> {
    if (principal.via === 'token')
      return principal.tokenId && principal.teamId
        ? this.tokens.accessLost(principal.teamId, principal.tokenId)
        : 'token_revoked';
    if (!principal.session) return 'logged_out';
    const session = await this.sessions.findByHash(principal.session.idHash);
    if (!session) return 'logged_out';
    if (session.expiresAt.getTime() <= this.clock.now().getTime()) return 'session_expired';
    return null;
  }

  /** Starts a session; the caller sets the cookie with the returned value. */
  async startSession(user: UserEntity): Promise<{ cookie: string; csrfToken: string; expiresAt: Date }> {
    const cookie = randomBytes(32).toString('base64url');
    const csrfToken = randomBytes(24).toString('base64url');
    const expiresAt = new Date(this.clock.now().getTime() + this.config.SESSION_TTL_HOURS * 3600_000);
    const teams = await this.teams.listMine(user.id);
    await this.sessions.create({
      idHash: sha256(cookie),
      userId: user.id,
      activeTeamId: teams[0]?.id ?? null,
      csrfToken,
      createdAt: this.clock.now(),
      expiresAt,
    });
    return { cookie, csrfToken, expiresAt };
  }

  async devSignIn(login: string): Promise<UserEntity> {
    if (!this.devSignInEnabled) {
      throw notFound(
        'dev_sign_in_disabled',
        'Dev sign-in exists only in development without a GitHub OAuth client; sign in with GitHub.',
      );
    }
    return this.users.findOrCreateDevUser(login);
  }

  async endSession(principal: Principal | null): Promise<void> {
    if (!principal?.session) return;
    await this.sessions.delete(principal.session.idHash);
    this.bus.emit('access.lost', {
      reason: 'logged_out',
      sessionHash: principal.session.idHash,
      userId: principal.user.id,
    });
  }

  async switchTeam(principal: Principal, teamId: string): Promise<MeView> {
    if (!principal.session)
      throw badRequest('token_has_fixed_team', 'An API token always acts for its own team.');
    await this.teams.authorize(principal, teamId, 'read');
    await this.sessions.setActiveTeam(principal.session.idHash, teamId);
    return this.me({ ...principal, teamId });
  }

  async me(principal: Principal): Promise<MeView> {
    const teams = await this.teams.listMine(principal.user.id);
    return {
      user: this.users.view(principal.user),
      teams: principal.via === 'token' ? teams.filter((t) => t.id === principal.teamId) : teams,
      activeTeamId: principal.teamId,
      via: principal.via,
      csrfToken: principal.session?.csrfToken ?? null,
    };
  }

  /** The active team falls back to the first team when the stored one was left. */
  private async activeTeam(stored: string | null, userId: string): Promise<string | null> {
    if (stored && (await this.teams.isMember(stored, userId))) return stored;
    const teams = await this.teams.listMine(userId);
    return teams[0]?.id ?? null;
  }
}
