import { Injectable } from '@nestjs/common';
import type { MemberView, Role, TeamDetail, TeamSummary } from '@dryft/libs';
import { BanPolicy } from '../bans/ban-policy';
import { EventBus } from '../common/event-bus';
import { conflict, forbidden, notFound, badRequest } from '../common/errors';
import type { Principal } from '../common/principal';
import { BenchmarksService } from '../benchmarks/benchmarks.service';
import { UsersService } from '../users/users.service';
import { generateInviteCode, normalizeInviteCode, slugify } from './invite-code';
import { MembershipEntity } from './membership.entity';
import { ACTION_TEXT, roleAllows, TeamAction, tokenAllows } from './team-policy';
import { TeamEntity } from './team.entity';
import { TeamsRepository } from './teams.repository';

@Injectable()
export class TeamsService {
  constructor(
    private readonly teams: TeamsRepository,
    private readonly users: UsersService,
    private readonly benchmarks: BenchmarksService,
    private readonly bus: EventBus,
    private readonly bans: BanPolicy,
  ) {}

  /**
   * The gate every team-scoped route goes through. Someone outside the team gets 404 (a team's
   * existence is not revealed); a member whose role does not allow the action gets 403 naming it.
   */
  async authorize(principal: Principal, teamId: string, action: TeamAction): Promise<MembershipEntity> {
    if (principal.via === 'token' && principal.teamId !== teamId) throw this.teamNotFound();
    const membership = await this.teams.findMembership(teamId, principal.user.id);
    if (!membership) throw this.teamNotFound();
    if (principal.via === 'token' && !tokenAllows(action)) {
      throw forbidden(
        'token_not_allowed',
        `API tokens cannot ${ACTION_TEXT[action]}; sign in to the web as an owner or admin.`,
      );
    }
    if (!roleAllows(membership.role, action)) {
      const who =
        action === 'change_roles' || action === 'manage_webhooks' ? 'team owners' : 'team owners and admins';
      throw forbidden(
        'role_not_allowed',
        `Only ${who} can ${ACTION_TEXT[action]}; your role is ${membership.role}.`,
      );
    }
    return membership;
  }

  /** The team a request acts for: the token's team, or the session's active team. */
  requireActiveTeam(principal: Principal): string {
    if (!principal.teamId) {
      throw badRequest(
        'no_active_team',
        'Create or join a team first, or choose one with POST /api/me/active-team.',
      );
    }
    return principal.teamId;
  }

  async listMine(userId: string): Promise<TeamSummary[]> {
    const rows = await this.teams.listForUser(userId);
    return rows.map(({ team, role, memberCount }) => ({
      id: team.id,
      name: team.name,
      slug: team.slug,
      role,
      memberCount,
    }));
  }

  async create(principal: Principal, name: string): Promise<TeamDetail> {
    this.requireSession(principal, 'create a team');
    await this.bans.assertCanJoinTeams(principal.user.id, 'create a team');
    await this.requireSubmissionsOpen('Teams are created');
    const slug = await this.uniqueSlug(name);
    const team = await this.teams.transaction(async (tx) => {
      const created = await tx.createTeam({ name, slug, inviteCode: await this.uniqueInviteCode() });
      await tx.addMember(created.id, principal.user.id, 'owner');
      return created;
    });
    return this.detail(principal, team.id);
  }

  async join(principal: Principal, rawCode: string): Promise<TeamDetail> {
    this.requireSession(principal, 'join a team');
    const code = normalizeInviteCode(rawCode);
    if (!code) {
      throw badRequest(
        'invalid_invite_code',
        'An invite code is six letters and digits, such as K7M2QX; check it with the team owner or admin.',
      );
    }
    await this.requireSubmissionsOpen('Teams are joined');
    await this.bans.assertCanJoinTeams(principal.user.id, 'join a team');
    const team = await this.teams.findByInviteCode(code);
    if (!team) {
      throw notFound(
        'invite_code_not_found',
        'No team has this invite code. Ask an owner or admin for the current code; it changes when they regenerate it.',
      );
    }
    if (await this.teams.findMembership(team.id, principal.user.id)) {
      throw conflict('already_member', `You are already a member of ${team.name}.`);
    }
    await this.teams.addMember(team.id, principal.user.id, 'member');
    this.bus.emit('team.member_joined', { teamId: team.id, userId: principal.user.id });
    return this.detail(principal, team.id);
  }

  async detail(principal: Principal, teamId: string): Promise<TeamDetail> {
    const membership = await this.authorize(principal, teamId, 'read');
    const team = (await this.teams.findById(teamId))!;
    const members = await this.memberViews(teamId);
    const seesCode = principal.via === 'session' && roleAllows(membership.role, 'manage_invite_code');
    return {
      id: team.id,
      name: team.name,
      slug: team.slug,
      role: membership.role,
      inviteCode: seesCode ? team.inviteCode : null,
      members,
      createdAt: team.createdAt.toISOString(),
    };
  }

  async regenerateInviteCode(principal: Principal, teamId: string): Promise<TeamDetail> {
    await this.authorize(principal, teamId, 'manage_invite_code');
    await this.teams.setInviteCode(teamId, await this.uniqueInviteCode());
    return this.detail(principal, teamId);
  }

  /**
   * Leaving: a sole owner with other members hands ownership to one of them first; a team left
   * empty keeps its submissions and results.
   */
  async leave(
    principal: Principal,
    teamId: string,
    newOwnerUserId?: string,
  ): Promise<{ left: true; teamId: string }> {
    this.requireSession(principal, 'leave a team');
    await this.authorize(principal, teamId, 'read');
    const userId = principal.user.id;
    await this.teams.transaction(async (tx) => {
      const members = await tx.lockMembers(teamId);
      const me = members.find((m) => m.userId === userId);
      if (!me) throw this.teamNotFound();
      const others = members.filter((m) => m.userId !== userId);
      const otherOwners = others.filter((m) => m.role === 'owner');
      if (me.role === 'owner' && otherOwners.length === 0 && others.length > 0) {
        if (!newOwnerUserId) {
          throw conflict(
            'ownership_transfer_required',
            'You are the only owner. Choose a member to become owner (newOwnerUserId) before you leave.',
            { members: others.map((m) => m.userId) },
          );
        }
        if (!others.some((m) => m.userId === newOwnerUserId)) {
          throw badRequest('new_owner_not_member', 'The new owner must be another member of this team.');
        }
        await tx.setRole(teamId, newOwnerUserId, 'owner');
      }
      await tx.removeMember(teamId, userId);
    });
    this.bus.emit('team.member_left', { teamId, userId });
    return { left: true, teamId };
  }

  async removeMember(principal: Principal, teamId: string, targetUserId: string): Promise<TeamDetail> {
    const actor = await this.authorize(principal, teamId, 'remove_members');
    if (targetUserId === principal.user.id) {
      throw badRequest('use_leave', 'To remove yourself, leave the team instead.');
    }
    await this.teams.transaction(async (tx) => {
      const members = await tx.lockMembers(teamId);
      const target = members.find((m) => m.userId === targetUserId);
      if (!target) throw notFound('member_not_found', 'That user is not a member of this team.');
      if (target.role === 'owner' && actor.role !== 'owner') {
        throw forbidden('cannot_remove_owner', 'Admins cannot remove an owner; ask an owner.');
      }
      await tx.removeMember(teamId, targetUserId);
    });
    this.bus.emit('team.member_removed', { teamId, userId: targetUserId });
    return this.detail(principal, teamId);
  }

  async changeRole(
    principal: Principal,
    teamId: string,
    targetUserId: string,
    role: Role,
  ): Promise<TeamDetail> {
    await this.authorize(principal, teamId, 'change_roles');
    await this.teams.transaction(async (tx) => {
      const members = await tx.lockMembers(teamId);
      const target = members.find((m) => m.userId === targetUserId);
      if (!target) throw notFound('member_not_found', 'That user is not a member of this team.');
      const owners = members.filter((m) => m.role === 'owner');
      if (target.role === 'owner' && role !== 'owner' && owners.length === 1) {
        throw conflict('last_owner', 'A team needs at least one owner: make another member owner first.');
      }
      await tx.setRole(teamId, targetUserId, role);
    });
    return this.detail(principal, teamId);
  }

  async isMember(teamId: string, userId: string): Promise<boolean> {
    return (await this.teams.findMembership(teamId, userId)) !== null;
  }

  findById(teamId: string): Promise<TeamEntity | null> {
    return this.teams.findById(teamId);
  }

  findBySlug(slug: string): Promise<TeamEntity | null> {
    return this.teams.findBySlug(slug);
  }

  async memberViews(teamId: string): Promise<MemberView[]> {
    const members = await this.teams.listMembers(teamId);
    const users = new Map((await this.users.findByIds(members.map((m) => m.userId))).map((u) => [u.id, u]));
    return members.map((m) => {
      const u = users.get(m.userId)!;
      return {
        userId: m.userId,
        login: u.login,
        name: u.name,
        avatarUrl: u.avatarUrl,
        role: m.role,
        joinedAt: m.joinedAt.toISOString(),
      };
    });
  }

  private requireSession(principal: Principal, what: string): void {
    if (principal.via !== 'session')
      throw forbidden('token_not_allowed', `API tokens cannot ${what}; sign in to the web.`);
  }

  private async requireSubmissionsOpen(what: string): Promise<void> {
    if (!(await this.benchmarks.anyOpenForSubmissions())) {
      throw forbidden(
        'submissions_closed',
        `${what} only while submissions are open, and the organizer has closed them. Check the announcement for reopening.`,
      );
    }
  }

  private teamNotFound() {
    return notFound('team_not_found', 'No such team among your teams.');
  }

  private async uniqueSlug(name: string): Promise<string> {
    const base = slugify(name);
    for (let i = 1; i < 1000; i++) {
      const slug = i === 1 ? base : `${base}-${i}`;
      if (!(await this.teams.slugTaken(slug))) return slug;
    }
    throw conflict('slug_exhausted', 'Too many teams share this name; choose another.');
  }

  private async uniqueInviteCode(): Promise<string> {
    for (;;) {
      const code = generateInviteCode();
      if (!(await this.teams.inviteCodeTaken(code))) return code;
    }
  }
}
