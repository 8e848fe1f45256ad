import { Injectable } from '@nestjs/common';
import type { BanView, CreateBanBody, MyBanView } from '@dryft/libs';
import { AuditService } from '../audit/audit.service';
import { BenchmarksService } from '../benchmarks/benchmarks.service';
import { Clock } from '../common/clock';
import { badRequest, conflict, notFound } from '../common/errors';
import { EventBus } from '../common/event-bus';
import type { Principal } from '../common/principal';
import { TeamsService } from '../teams/teams.service';
import { UsersService } from '../users/users.service';
import { BanPolicy } from './ban-policy';
import type { BanEntity } from './ban.entity';
import { BansRepository } from './bans.repository';

/** Organizers ban users or teams (per benchmark or hub-wide) and lift bans; participants see theirs. */
@Injectable()
export class BansService {
  constructor(
    private readonly bans: BansRepository,
    private readonly policy: BanPolicy,
    private readonly users: UsersService,
    private readonly teams: TeamsService,
    private readonly benchmarks: BenchmarksService,
    private readonly audit: AuditService,
    private readonly clock: Clock,
    private readonly bus: EventBus,
  ) {}

  async create(principal: Principal, body: CreateBanBody): Promise<BanView> {
    const benchmarkId = body.benchmarkId ?? null;
    if (benchmarkId) await this.benchmarks.get(benchmarkId);
    const endsAt = body.endsAt ? new Date(body.endsAt) : null;
    if (endsAt && endsAt.getTime() <= this.clock.now().getTime())
      throw badRequest('ends_in_past', 'endsAt must be in the future; omit it for a ban without end.');
    let userId: string | null = null;
    let teamId: string | null = null;
    if (body.user !== undefined) {
      const user = await this.users.findByLogin(body.user);
      if (!user)
        throw notFound('user_not_found', `No user with login "${body.user}" has signed in to this hub.`);
      userId = user.id;
    } else {
      const team = await this.teams.findBySlug(body.team!);
      if (!team)
        throw notFound(
          'team_not_found',
          `No team with slug "${body.team}"; the slug is in the team's page address.`,
        );
      teamId = team.id;
    }
    const ban = await this.bans.insert({
      userId,
      teamId,
      benchmarkId,
      reason: body.reason,
      endsAt,
      createdBy: principal.user.id,
    });
    const view = await this.view(ban);
    await this.audit.record(principal, {
      action: 'ban.create',
      target: { kind: 'ban', id: ban.id },
      benchmarkId,
      reason: body.reason,
      details: { subject: view.subject, endsAt: view.endsAt },
    });
    this.bus.emit('ban.created', { banId: ban.id, userId, teamId, benchmarkId, reason: body.reason });
    return view;
  }

  async lift(principal: Principal, id: string, reason: string): Promise<BanView> {
    const existing = await this.bans.findById(id);
    if (!existing) throw notFound('ban_not_found', `No ban ${id}.`);
    const lifted = await this.bans.lift(id, principal.user.id, reason, this.clock.now());
    if (!lifted)
      throw conflict(
        'ban_already_lifted',
        `This ban was already lifted on ${existing.liftedAt!.toISOString()}.`,
      );
    const view = await this.view(lifted);
    await this.audit.record(principal, {
      action: 'ban.lift',
      target: { kind: 'ban', id },
      benchmarkId: lifted.benchmarkId,
      reason,
      details: { subject: view.subject },
    });
    return view;
  }

  async list(activeOnly: boolean): Promise<BanView[]> {
    const rows = await this.bans.list({ activeAt: activeOnly ? this.clock.now() : undefined });
    return Promise.all(rows.map((b) => this.view(b)));
  }

  /** The bans in force on the caller and their teams (a token: its own team only). */
  async mine(principal: Principal): Promise<MyBanView[]> {
    const teamIds =
      principal.via === 'token'
        ? [principal.teamId!]
        : (await this.teams.listMine(principal.user.id)).map((t) => t.id);
    const rows = await this.policy.inForce(principal.user.id, teamIds);
    return Promise.all(
      rows.map(async (b) => {
        const v = await this.view(b);
        return { subject: v.subject, benchmarkId: v.benchmarkId, reason: v.reason, endsAt: v.endsAt };
      }),
    );
  }

  private async view(b: BanEntity): Promise<BanView> {
    const now = this.clock.now().getTime();
    const [creator, lifter] = await this.users
      .findByIds([b.createdBy, ...(b.liftedBy ? [b.liftedBy] : [])])
      .then((us) => [us.find((u) => u.id === b.createdBy), us.find((u) => u.id === b.liftedBy)]);
    let subject: BanView['subject'];
    if (b.userId) {
      const user = await this.users.findById(b.userId);
      subject = { kind: 'user', login: user?.login ?? 'unknown' };
    } else {
      const team = await this.teams.findById(b.teamId!);
      subject = { kind: 'team', slug: team?.slug ?? 'unknown', name: team?.name ?? 'unknown' };
    }
    return {
      id: b.id,
      subject,
      benchmarkId: b.benchmarkId,
      reason: b.reason,
      endsAt: b.endsAt?.toISOString() ?? null,
      createdAt: b.createdAt.toISOString(),
      createdBy: creator?.login ?? 'unknown',
      liftedAt: b.liftedAt?.toISOString() ?? null,
      liftedBy: lifter?.login ?? null,
      liftReason: b.liftReason,
      active: !b.liftedAt && (!b.endsAt || b.endsAt.getTime() > now),
    };
  }
}
