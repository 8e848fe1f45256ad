import { randomUUID } from 'node:crypto';
import type { Role } from '@dryft/libs';
import type { Principal } from '../../src/common/principal';
import { MembershipEntity } from '../../src/teams/membership.entity';
import { TeamEntity } from '../../src/teams/team.entity';
import { ApiTokenEntity } from '../../src/tokens/api-token.entity';
import { UserEntity } from '../../src/users/user.entity';

/** Builder factories: valid defaults, override what the test is about. */
export const aUser = (over: Partial<UserEntity> = {}): UserEntity =>
  Object.assign(new UserEntity(), {
    id: randomUUID(),
    githubId: null,
    login: `user-${Math.random().toString(36).slice(2, 8)}`,
    name: null,
    avatarUrl: null,
    createdAt: new Date(),
    ...over,
  });

export const aTeam = (over: Partial<TeamEntity> = {}): TeamEntity =>
  Object.assign(new TeamEntity(), {
    id: randomUUID(),
    name: 'Fast Qwen',
    slug: 'fast-qwen',
    inviteCode: 'K7M2QX',
    createdAt: new Date(),
    ...over,
  });

export const aMembership = (teamId: string, userId: string, role: Role = 'member'): MembershipEntity =>
  Object.assign(new MembershipEntity(), { teamId, userId, role, joinedAt: new Date() });

export const aSession = (user: UserEntity, teamId: string | null = null): Principal => ({
  user,
  isAdmin: false,
  via: 'session',
  teamId,
  session: {
    idHash: 'h',
    userId: user.id,
    activeTeamId: teamId,
    csrfToken: 'c',
    createdAt: new Date(),
    expiresAt: new Date(Date.now() + 3600_000),
  },
});

export const aTokenPrincipal = (user: UserEntity, teamId: string): Principal => ({
  user,
  isAdmin: false,
  via: 'token',
  teamId,
  tokenId: randomUUID(),
});

export const anApiToken = (over: Partial<ApiTokenEntity> = {}): ApiTokenEntity =>
  Object.assign(new ApiTokenEntity(), {
    id: randomUUID(),
    teamId: randomUUID(),
    name: 'ci',
    tokenHash: 'hash',
    prefix: 'dryft_pat_abcd',
    createdBy: randomUUID(),
    createdAt: new Date(),
    lastUsedAt: null,
    expiresAt: null,
    revokedAt: null,
    ...over,
  });
