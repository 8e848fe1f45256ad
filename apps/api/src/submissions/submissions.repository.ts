import { Injectable } from '@nestjs/common';
import { DataSource, Repository } from 'typeorm';
import { SubmissionEntity } from './submission.entity';

@Injectable()
export class SubmissionsRepository {
  private readonly repo: Repository<SubmissionEntity>;

  constructor(private readonly dataSource: DataSource) {
    this.repo = dataSource.getRepository(SubmissionEntity);
  }

  /**
   * Inserts with the team's next number for this source name ("fast-qwen #7"). The number is taken
   * under a per-(team, source) advisory lock, so two concurrent uploads never get the same one.
   */
  createNumbered(row: Omit<SubmissionEntity, 'id' | 'number' | 'createdAt'>): Promise<SubmissionEntity> {
    return this.dataSource.transaction(async (manager) => {
      await manager.query('SELECT pg_advisory_xact_lock(hashtext($1))', [
        `submission:${row.teamId}:${row.sourceName}`,
      ]);
      const [{ next }] = await manager.query(
        'SELECT COALESCE(MAX(number), 0) + 1 AS next FROM submissions WHERE team_id = $1 AND source_name = $2',
        [row.teamId, row.sourceName],
      );
      return manager.save(manager.create(SubmissionEntity, { ...row, number: Number(next) }));
    });
  }

  findById(id: string): Promise<SubmissionEntity | null> {
    return this.repo.findOneBy({ id });
  }

  /** Newest first; the cursor is the last item's (created_at, id). */
  async listForTeam(
    teamId: string,
    opts: { benchmarkId?: string; before?: { createdAt: Date; id: string }; limit: number },
  ) {
    const qb = this.repo.createQueryBuilder('s').where('s.team_id = :teamId', { teamId });
    if (opts.benchmarkId) qb.andWhere('s.benchmark_id = :b', { b: opts.benchmarkId });
    if (opts.before)
      qb.andWhere('(s.created_at, s.id) < (:c, :i)', { c: opts.before.createdAt, i: opts.before.id });
    return qb.orderBy('s.created_at', 'DESC').addOrderBy('s.id', 'DESC').limit(opts.limit).getMany();
  }
}
