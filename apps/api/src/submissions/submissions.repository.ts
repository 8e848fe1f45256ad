import { Injectable } from '@nestjs/common';
import { DataSource, EntityManager, Repository } from 'typeorm';
import { SubmissionEntity } from './submission.entity';

/** The number the next submission of a (team, benchmark, source name) gets. */
interface NextNumberRow {
  next: number;
}

/** A team's submissions since a time, and the bytes it stores (bigint: text). */
interface TeamUsageRow {
  since: number;
  stored: string;
}

@Injectable()
export class SubmissionsRepository {
  private readonly repo: Repository<SubmissionEntity>;

  constructor(private readonly dataSource: DataSource) {
    this.repo = dataSource.getRepository(SubmissionEntity);
  }

  /**
   * Inserts with the team's next number for this source name on this benchmark ("fast-qwen #7"):
   * each benchmark counts its own. The number is taken under a per-(team, benchmark, source)
   * advisory lock, so two concurrent uploads never get the same one.
   */
  /**
   * Numbers and inserts a submission. `prepare` runs first inside the same transaction, under the
   * team's upload lock: it checks the team's quotas (two uploads at once cannot both take the last
   * one) and stores the artifact, whose sha256 it returns; when it throws, nothing is inserted.
   */
  createNumbered(
    row: Omit<SubmissionEntity, 'id' | 'number' | 'createdAt' | 'sha256'>,
    prepare: (manager: EntityManager) => Promise<{ sha256: string }>,
  ): Promise<SubmissionEntity> {
    return this.dataSource.transaction(async (manager) => {
      await manager.query('SELECT pg_advisory_xact_lock(hashtext($1))', [`submission-quota:${row.teamId}`]);
      const { sha256 } = await prepare(manager);
      await manager.query('SELECT pg_advisory_xact_lock(hashtext($1))', [
        `submission:${row.teamId}:${row.benchmarkId}:${row.sourceName}`,
      ]);
      const [{ next }] = await manager.query<NextNumberRow[]>(
        'SELECT COALESCE(MAX(number), 0) + 1 AS next FROM submissions WHERE team_id = $1 AND benchmark_id = $2 AND source_name = $3',
        [row.teamId, row.benchmarkId, row.sourceName],
      );
      return manager.save(manager.create(SubmissionEntity, { ...row, sha256, number: Number(next) }));
    });
  }

  /** A team's submissions stored since `since` (uploads and pushes), and the bytes of all it stores. */
  async usage(
    teamId: string,
    since: Date,
    manager: EntityManager = this.dataSource.manager,
  ): Promise<{ since: number; storedBytes: number }> {
    const [row] = await manager.query<TeamUsageRow[]>(
      `SELECT count(*) FILTER (WHERE created_at >= $2)::int AS since, coalesce(sum(size_bytes), 0)::bigint AS stored
         FROM submissions WHERE team_id = $1`,
      [teamId, since],
    );
    return { since: Number(row.since), storedBytes: Number(row.stored) };
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
