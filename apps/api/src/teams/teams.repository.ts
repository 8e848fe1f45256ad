import { Injectable } from '@nestjs/common';
import type { Role } from '@dryft/libs';
import { DataSource, In } from 'typeorm';
import { TransactionalRepository } from '../common/transactional-repository';
import { MembershipEntity } from './membership.entity';
import { TeamEntity } from './team.entity';

export interface MembershipWithTeam {
  team: TeamEntity;
  role: Role;
  memberCount: number;
}

/** One of a user's memberships with the team's size (count(*) is bigint: text). */
interface UserMembershipRow {
  team_id: string;
  role: Role;
  member_count: string;
}

@Injectable()
export class TeamsRepository extends TransactionalRepository {
  constructor(dataSource: DataSource) {
    super(dataSource);
  }

  findById(id: string): Promise<TeamEntity | null> {
    return this.manager.findOneBy(TeamEntity, { id });
  }

  findBySlug(slug: string): Promise<TeamEntity | null> {
    return this.manager.findOneBy(TeamEntity, { slug });
  }

  findByInviteCode(code: string): Promise<TeamEntity | null> {
    return this.manager.findOneBy(TeamEntity, { inviteCode: code });
  }

  async slugTaken(slug: string): Promise<boolean> {
    return (await this.manager.countBy(TeamEntity, { slug })) > 0;
  }

  async inviteCodeTaken(code: string): Promise<boolean> {
    return (await this.manager.countBy(TeamEntity, { inviteCode: code })) > 0;
  }

  createTeam(team: Pick<TeamEntity, 'name' | 'slug' | 'inviteCode'>): Promise<TeamEntity> {
    return this.manager.save(this.manager.create(TeamEntity, team));
  }

  async setInviteCode(teamId: string, code: string): Promise<void> {
    await this.manager.update(TeamEntity, { id: teamId }, { inviteCode: code });
  }

  findMembership(teamId: string, userId: string): Promise<MembershipEntity | null> {
    return this.manager.findOneBy(MembershipEntity, { teamId, userId });
  }

  /** Locks the team's membership rows: role changes and departures are decided one at a time. */
  lockMembers(teamId: string): Promise<MembershipEntity[]> {
    return this.manager
      .createQueryBuilder(MembershipEntity, 'm')
      .setLock('pessimistic_write')
      .where('m.team_id = :teamId', { teamId })
      .orderBy('m.joined_at', 'ASC')
      .getMany();
  }

  listMembers(teamId: string): Promise<MembershipEntity[]> {
    return this.manager.find(MembershipEntity, { where: { teamId }, order: { joinedAt: 'ASC' } });
  }

  addMember(teamId: string, userId: string, role: Role): Promise<MembershipEntity> {
    return this.manager.save(this.manager.create(MembershipEntity, { teamId, userId, role }));
  }

  async setRole(teamId: string, userId: string, role: Role): Promise<void> {
    await this.manager.update(MembershipEntity, { teamId, userId }, { role });
  }

  /**
   * Removes a member and, in the same transaction, revokes the API tokens they made for the team:
   * a token never outlives its creator's membership, and rejoining does not bring it back.
   */
  async removeMember(teamId: string, userId: string): Promise<void> {
    await this.manager.delete(MembershipEntity, { teamId, userId });
    await this.manager.query(
      `UPDATE api_tokens SET revoked_at = now(), revoked_reason = 'creator_left'
        WHERE team_id = $1 AND created_by = $2 AND revoked_at IS NULL`,
      [teamId, userId],
    );
  }

  async listForUser(userId: string): Promise<MembershipWithTeam[]> {
    const rows = await this.manager.query<UserMembershipRow[]>(
      `SELECT m.team_id, m.role, (SELECT count(*) FROM memberships c WHERE c.team_id = m.team_id) AS member_count
         FROM memberships m JOIN teams t ON t.id = m.team_id
        WHERE m.user_id = $1 ORDER BY t.name`,
      [userId],
    );
    const teams = rows.length
      ? await this.manager.findBy(TeamEntity, { id: In(rows.map((r) => r.team_id)) })
      : [];
    const byId = new Map(teams.map((t) => [t.id, t]));
    return rows.map((r) => ({
      team: byId.get(r.team_id)!,
      role: r.role,
      memberCount: Number(r.member_count),
    }));
  }
}
