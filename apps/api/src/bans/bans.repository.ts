import { Injectable } from '@nestjs/common';
import { DataSource, Repository } from 'typeorm';
import { BanEntity } from './ban.entity';

/** In force at `now`: not lifted and not past its end. */
const ACTIVE = `b.lifted_at IS NULL AND (b.ends_at IS NULL OR b.ends_at > :now)`;

/** A team a user belongs to. */
interface MembershipTeamRow {
  team_id: string;
}

@Injectable()
export class BansRepository {
  private readonly repo: Repository<BanEntity>;

  constructor(private readonly dataSource: DataSource) {
    this.repo = dataSource.getRepository(BanEntity);
  }

  async insert(
    row: Pick<BanEntity, 'userId' | 'teamId' | 'benchmarkId' | 'reason' | 'endsAt' | 'createdBy'>,
  ) {
    const saved = await this.repo.insert(row);
    return (await this.repo.findOneBy({ id: saved.identifiers[0].id as string }))!;
  }

  findById(id: string): Promise<BanEntity | null> {
    return this.repo.findOneBy({ id });
  }

  list(opts: { activeAt?: Date }): Promise<BanEntity[]> {
    const q = this.repo.createQueryBuilder('b');
    if (opts.activeAt) q.where(ACTIVE, { now: opts.activeAt });
    return q.orderBy('b.created_at', 'DESC').addOrderBy('b.id', 'DESC').getMany();
  }

  /** Lifts once: answers null when the ban was already lifted. */
  async lift(id: string, by: string, reason: string, at: Date): Promise<BanEntity | null> {
    const res = await this.repo
      .createQueryBuilder()
      .update()
      .set({ liftedAt: at, liftedBy: by, liftReason: reason })
      .where('id = :id AND lifted_at IS NULL', { id })
      .execute();
    return res.affected ? this.findById(id) : null;
  }

  /**
   * The bans in force for a user and some teams; with a benchmark, those on that benchmark or
   * hub-wide, otherwise every scope.
   */
  active(opts: { userId: string; teamIds: string[]; benchmarkId?: string; now: Date }): Promise<BanEntity[]> {
    const q = this.repo
      .createQueryBuilder('b')
      .where(ACTIVE, { now: opts.now })
      .andWhere('(b.user_id = :userId OR b.team_id = ANY(:teamIds))', {
        userId: opts.userId,
        teamIds: opts.teamIds,
      });
    if (opts.benchmarkId)
      q.andWhere('(b.benchmark_id IS NULL OR b.benchmark_id = :bid)', { bid: opts.benchmarkId });
    return q.orderBy('b.ends_at', 'DESC', 'NULLS FIRST').getMany();
  }

  /** The teams a user belongs to (a ban on any of them keeps the user from founding or joining another). */
  async teamIdsOf(userId: string): Promise<string[]> {
    const rows = await this.dataSource.query<MembershipTeamRow[]>(
      'SELECT team_id FROM memberships WHERE user_id = $1',
      [userId],
    );
    return rows.map((r) => r.team_id);
  }
}
