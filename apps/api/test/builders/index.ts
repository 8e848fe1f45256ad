import { randomUUID } from 'node:crypto';
import type { HarnessResultEvent, Role } from '@dryft/libs';
import type { Principal } from '../../src/common/principal';
import { RunEntity } from '../../src/runs/run.entity';
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

/** A run as the database holds it: an assigned, not yet started public decode run by default. */
export const aRun = (over: Partial<RunEntity> = {}): RunEntity =>
  Object.assign(new RunEntity(), {
    id: randomUUID(),
    submissionId: randomUUID(),
    benchmarkId: 'toy-decode',
    teamId: randomUUID(),
    createdBy: randomUUID(),
    mode: 'public',
    hardware: null,
    tier: null,
    dataset: null,
    status: 'assigned',
    failureCode: null,
    message: null,
    detail: null,
    cancelReason: null,
    score: null,
    scoreInterval: null,
    pairs: null,
    calibrationPart: null,
    absoluteInterval: null,
    scoring: null,
    promptNonce: null,
    rulesVersion: 1,
    invalidated: false,
    invalidatedReason: null,
    disqualifiedAt: null,
    disqualifiedReason: null,
    disqualifiedBy: null,
    agentId: randomUUID(),
    agentName: 'gpu-1',
    slot: 0,
    leaseExpiresAt: new Date(Date.now() + 30_000),
    leaseLostAt: null,
    logLines: 0,
    logBytes: '0',
    logTail: null,
    createdAt: new Date(),
    assignedAt: new Date(),
    startedAt: null,
    finishedAt: null,
    runTimeLimitSeconds: 600,
    deadlineAt: new Date(Date.now() + 600_000),
    lastBatchSeq: 0,
    lastLogSeq: 0,
    workloads: null,
    metrics: null,
    spec: { kind: 'decode' } as RunEntity['spec'],
    quotaBucket: 'public',
    quotaDay: '2026-11-30',
    quotaHolder: randomUUID(),
    quotaRefunded: false,
    downloadTokenHash: null,
    ...over,
  });

/** A result event as the harness writes it: succeeded with a score by default. */
export const aResult = (over: Partial<HarnessResultEvent> = {}): HarnessResultEvent => ({
  type: 'result',
  status: 'succeeded',
  failureCode: null,
  message: 'ok',
  score: 123.4,
  workloads: [],
  metrics: {},
  ...over,
});
