import { Inject, Injectable } from '@nestjs/common';
import type { QuotaGrantBody, QuotaGrantView } from '@dryft/libs';
import { AuditService } from '../audit/audit.service';
import { BenchmarksService } from '../benchmarks/benchmarks.service';
import { Clock } from '../common/clock';
import { badRequest, notFound } from '../common/errors';
import type { Principal } from '../common/principal';
import { CONFIG, Config } from '../config/config';
import { quotaBuckets, utcDay } from '../runs/run-options';
import { TeamsService } from '../teams/teams.service';
import { UsersService } from '../users/users.service';
import { QuotaGrantRow, QuotaGrantsRepository } from './quota-grants.repository';

/**
 * Organizers' quota grants: extra runs of a daily limit for a team or user on a day, with a reason
 * in the audit log. The runs domain adds them to the limit (RunsService.create and quota).
 */
@Injectable()
export class QuotaGrantsService {
  constructor(
    private readonly repo: QuotaGrantsRepository,
    private readonly benchmarks: BenchmarksService,
    private readonly teams: TeamsService,
    private readonly users: UsersService,
    private readonly audit: AuditService,
    private readonly clock: Clock,
    @Inject(CONFIG) private readonly config: Config,
  ) {}

  /** Extra runs granted for this holder, bucket and day (0 without a grant). */
  extraRuns(benchmarkId: string, holderId: string, bucket: string, day: string): Promise<number> {
    return this.repo.extraRuns(benchmarkId, holderId, bucket, day);
  }

  async grant(principal: Principal, benchmarkId: string, body: QuotaGrantBody): Promise<QuotaGrantView> {
    const b = await this.benchmarks.get(benchmarkId);
    const buckets = quotaBuckets(b, this.config.TEAM_PUBLIC_RUNS_PER_DAY);
    const bucket = buckets.find((x) => x.bucket === body.bucket);
    if (!bucket)
      throw badRequest(
        'unknown_bucket',
        `${b.id} has no daily limit named "${body.bucket}"; use one of: ${buckets.map((x) => x.bucket).join(', ')}.`,
      );
    if (bucket.limit === null)
      throw badRequest(
        'bucket_unlimited',
        `${b.id}'s ${body.bucket} runs have no daily limit; there is nothing to grant.`,
      );
    const today = utcDay(this.clock.now()).day;
    const day = body.day ?? today;
    if (day < today)
      throw badRequest(
        'day_in_past',
        `${day} is over (today is ${today} UTC); grant runs for today or a later day.`,
      );
    const holder = await this.holderOf(b.id, b.ranks, body);
    const grant = await this.repo.insert({
      benchmarkId: b.id,
      holderId: holder.id,
      holderKind: holder.kind,
      bucket: body.bucket,
      day,
      extraRuns: body.extraRuns,
      reason: body.reason,
      grantedBy: principal.user.id,
    });
    await this.audit.record(principal, {
      action: 'quota.grant',
      target: { kind: holder.kind, id: holder.id },
      benchmarkId: b.id,
      reason: body.reason,
      details: { bucket: body.bucket, day, extraRuns: body.extraRuns, name: holder.name },
    });
    return view({ ...grant, holderName: holder.name, grantedByLogin: principal.user.login });
  }

  /** Grants of today and later days, newest first. */
  async list(benchmarkId: string): Promise<QuotaGrantView[]> {
    await this.benchmarks.get(benchmarkId);
    return (await this.repo.list(benchmarkId, utcDay(this.clock.now()).day)).map(view);
  }

  private async holderOf(
    benchmarkId: string,
    ranks: 'teams' | 'users',
    body: QuotaGrantBody,
  ): Promise<{ kind: 'team' | 'user'; id: string; name: string }> {
    if (ranks === 'users' && body.team !== undefined)
      throw badRequest(
        'holder_mismatch',
        `${benchmarkId} counts runs per user; grant to a user ("user": their GitHub login), not a team.`,
      );
    if (ranks === 'teams' && body.user !== undefined)
      throw badRequest(
        'holder_mismatch',
        `${benchmarkId} counts runs per team; grant to a team ("team": its slug), not a user.`,
      );
    if (body.user !== undefined) {
      const user = await this.users.findByLogin(body.user);
      if (!user)
        throw notFound('user_not_found', `No user with login "${body.user}" has signed in to this hub.`);
      return { kind: 'user', id: user.id, name: user.login };
    }
    const team = await this.teams.findBySlug(body.team!);
    if (!team)
      throw notFound(
        'team_not_found',
        `No team with slug "${body.team}" (the slug is in the team page's address).`,
      );
    return { kind: 'team', id: team.id, name: team.name };
  }
}

function view(g: QuotaGrantRow): QuotaGrantView {
  return {
    id: g.id,
    benchmarkId: g.benchmarkId,
    holder: { kind: g.holderKind, id: g.holderId, name: g.holderName },
    bucket: g.bucket,
    day: g.day,
    extraRuns: g.extraRuns,
    reason: g.reason,
    grantedBy: g.grantedByLogin,
    createdAt: g.createdAt.toISOString(),
  };
}
