import { Inject, Injectable } from '@nestjs/common';
import { CONFIG, type Config } from '../config/config';
import type { CreatedTokenView, TokenView } from '@dryft/libs';
import {
  checkTokenFormat,
  generateToken,
  hashToken,
  tokenDisplayPrefix,
  tokenHubTag,
} from '@dryft/libs/node';
import { Clock } from '../common/clock';
import { EventBus } from '../common/event-bus';
import { badRequest, notFound, unauthorized } from '../common/errors';
import type { Principal } from '../common/principal';
import { TeamsService } from '../teams/teams.service';
import { UsersService } from '../users/users.service';
import { ApiTokenEntity } from './api-token.entity';
import { TokensRepository } from './tokens.repository';

const REFUSED_HINT =
  'Check that DRYFT_TOKEN holds the whole value; an owner or admin can create a replacement under API tokens.';

@Injectable()
export class TokensService {
  constructor(
    private readonly tokens: TokensRepository,
    private readonly teams: TeamsService,
    private readonly users: UsersService,
    private readonly clock: Clock,
    private readonly bus: EventBus,
    @Inject(CONFIG) private readonly config: Config,
  ) {}

  private tag?: Promise<string>;

  /** This hub's tag, read once: every token made here starts with it. */
  hubTag(): Promise<string> {
    this.tag ??= this.tokens.hubTag().catch((err: unknown) => {
      this.tag = undefined;
      throw err;
    });
    return this.tag;
  }

  async create(
    principal: Principal,
    teamId: string,
    name: string,
    expiresAt?: string,
  ): Promise<CreatedTokenView> {
    await this.teams.authorize(principal, teamId, 'manage_tokens');
    const expiry = expiresAt ? new Date(expiresAt) : null;
    if (expiry && expiry.getTime() <= this.clock.now().getTime()) {
      throw badRequest('expiry_in_past', 'expiresAt must be in the future.');
    }
    const value = generateToken('pat', await this.hubTag());
    const entity = await this.tokens.create({
      teamId,
      name,
      tokenHash: hashToken(value),
      prefix: tokenDisplayPrefix(value),
      createdBy: principal.user.id,
      expiresAt: expiry,
    });
    return { ...(await this.view(entity)), token: value };
  }

  async list(principal: Principal, teamId: string): Promise<TokenView[]> {
    await this.teams.authorize(principal, teamId, 'manage_tokens');
    const rows = await this.tokens.listForTeam(teamId);
    const logins = new Map(
      (await this.users.findByIds([...new Set(rows.map((r) => r.createdBy))])).map((u) => [u.id, u.login]),
    );
    return rows.map((r) => this.toView(r, logins.get(r.createdBy) ?? 'unknown'));
  }

  async revoke(principal: Principal, teamId: string, tokenId: string): Promise<TokenView> {
    await this.teams.authorize(principal, teamId, 'manage_tokens');
    const token = await this.tokens.findInTeam(teamId, tokenId);
    if (!token) throw notFound('token_not_found', 'No such token in this team.');
    if (!token.revokedAt) {
      token.revokedAt = this.clock.now();
      await this.tokens.revoke(token.id, token.revokedAt);
      this.bus.emit('access.lost', { reason: 'token_revoked', tokenId: token.id, teamId });
    }
    return this.view(token);
  }

  /**
   * Resolves a bearer token to its team and creator. Malformed and bad-checksum values are refused
   * before any database query; each refusal says which case it is.
   */
  async authenticate(value: string): Promise<Principal> {
    const format = checkTokenFormat(value, 'pat');
    if (!format.ok)
      throw unauthorized(
        format.reason === 'bad_checksum' ? 'token_bad_checksum' : 'token_malformed',
        `${format.message} ${REFUSED_HINT}`,
      );
    const token = await this.tokens.findByHash(hashToken(value));
    if (!token) {
      const ours = await this.hubTag();
      const theirs = tokenHubTag(value);
      if (theirs !== ours)
        throw unauthorized(
          'token_other_hub',
          `This token belongs to another hub (it starts dryft_pat_${theirs}…, tokens of this hub at ${this.config.PUBLIC_URL} start dryft_pat_${ours}…). Point DRYFT_API_URL (or --api-url) at the hub that made it, or create a token on this hub under API tokens.`,
        );
      throw unauthorized('token_invalid', `This token is not known to this hub. ${REFUSED_HINT}`);
    }
    const now = this.clock.now();
    if (token.revokedAt && token.revokedReason === 'creator_left')
      throw unauthorized(
        'token_creator_left',
        'This token was revoked when its creator left the team; it stays revoked even if they rejoin. Ask an owner or admin for a replacement.',
      );
    if (token.revokedAt)
      throw unauthorized(
        'token_revoked',
        'This token was revoked; ask a team owner or admin for a replacement.',
      );
    if (token.expiresAt && token.expiresAt.getTime() <= now.getTime()) {
      throw unauthorized(
        'token_expired',
        `This token expired on ${token.expiresAt.toISOString()}; ask a team owner or admin for a replacement.`,
      );
    }
    const user = await this.users.findById(token.createdBy);
    if (!user || !(await this.teams.isMember(token.teamId, user.id))) {
      throw unauthorized(
        'token_creator_left',
        "This token's creator is no longer a member of the team, so it no longer works; ask an owner or admin for a replacement.",
      );
    }
    await this.tokens.touch(token.id, now);
    return {
      user,
      isAdmin: this.users.isAdmin(user),
      via: 'token',
      teamId: token.teamId,
      tokenId: token.id,
      expiresAt: token.expiresAt,
    };
  }

  /** Why a token that authenticated earlier no longer works, or null while it still does. */
  async accessLost(
    teamId: string,
    tokenId: string,
  ): Promise<'token_revoked' | 'token_expired' | 'token_creator_left' | null> {
    const token = await this.tokens.findInTeam(teamId, tokenId);
    if (token?.revokedAt && token.revokedReason === 'creator_left') return 'token_creator_left';
    if (!token || token.revokedAt) return 'token_revoked';
    if (token.expiresAt && token.expiresAt.getTime() <= this.clock.now().getTime()) return 'token_expired';
    if (!(await this.teams.isMember(token.teamId, token.createdBy))) return 'token_creator_left';
    return null;
  }

  private async view(entity: ApiTokenEntity): Promise<TokenView> {
    const creator = await this.users.findById(entity.createdBy);
    return this.toView(entity, creator?.login ?? 'unknown');
  }

  private toView(t: ApiTokenEntity, createdBy: string): TokenView {
    return {
      id: t.id,
      name: t.name,
      prefix: t.prefix,
      createdBy,
      createdAt: t.createdAt.toISOString(),
      lastUsedAt: t.lastUsedAt?.toISOString() ?? null,
      expiresAt: t.expiresAt?.toISOString() ?? null,
      revokedAt: t.revokedAt?.toISOString() ?? null,
    };
  }
}
