import { Injectable } from '@nestjs/common';
import { DataSource, EntityManager, In } from 'typeorm';
import { RunEntity } from '../runs/run.entity';
import { RerunBatchEntity } from './rerun-batch.entity';

/** A run's holder names, for the progress view and the final board. */
export interface HolderNames {
  teamName: string | null;
  teamSlug: string | null;
  userLogin: string | null;
}

/**
 * The organizer's re-run requests and the runs they queued. Inserting a run is the one write to
 * `runs` here (as RunsRepository's insert); every later change of its state is RunQueue's.
 */
@Injectable()
export class RerunsRepository {
  constructor(private readonly dataSource: DataSource) {}

  /**
   * A batch and its queued runs, in one transaction (a refusal or a crash leaves neither). The runs
   * are created a millisecond apart in the order given (best first): created_at orders the queue
   * and the batch's lists, and one transaction's now() alone would leave them to their random ids.
   */
  insertBatch(
    batch: Partial<RerunBatchEntity>,
    runs: (batchId: string) => Partial<RunEntity>[],
    now: Date,
  ): Promise<{ batch: RerunBatchEntity; runs: RunEntity[] }> {
    return this.dataSource.transaction(async (m: EntityManager) => {
      const saved = await m.save(m.create(RerunBatchEntity, batch));
      const rows = await m.save(
        runs(saved.id).map((r, i) => m.create(RunEntity, { ...r, createdAt: new Date(now.getTime() + i) })),
      );
      return { batch: saved, runs: rows };
    });
  }

  findRun(id: string): Promise<RunEntity | null> {
    return this.dataSource.getRepository(RunEntity).findOneBy({ id });
  }

  runsByIds(ids: string[]): Promise<RunEntity[]> {
    if (ids.length === 0) return Promise.resolve([]);
    return this.dataSource.getRepository(RunEntity).findBy({ id: In(ids) });
  }

  batch(id: string): Promise<RerunBatchEntity | null> {
    return this.dataSource.getRepository(RerunBatchEntity).findOneBy({ id });
  }

  /** A benchmark's batches, newest first. */
  batches(benchmarkId: string, limit: number): Promise<RerunBatchEntity[]> {
    return this.dataSource
      .getRepository(RerunBatchEntity)
      .find({ where: { benchmarkId }, order: { createdAt: 'DESC', id: 'DESC' }, take: limit });
  }

  /** The benchmark's final board under a rules version (one at most: a partial unique index). */
  finalBatch(benchmarkId: string, rulesVersion: number): Promise<RerunBatchEntity | null> {
    return this.dataSource
      .getRepository(RerunBatchEntity)
      .findOneBy({ benchmarkId, rulesVersion, kind: 'final' });
  }

  /** The runs each batch queued, oldest first. */
  runsOfBatches(batchIds: string[]): Promise<RunEntity[]> {
    if (batchIds.length === 0) return Promise.resolve([]);
    return this.dataSource
      .getRepository(RunEntity)
      .find({ where: { rerunBatchId: In(batchIds) }, order: { createdAt: 'ASC', id: 'ASC' } });
  }

  async markPublished(batchId: string, at: Date, login: string): Promise<void> {
    await this.dataSource
      .getRepository(RerunBatchEntity)
      .update({ id: batchId }, { publishedAt: at, publishedByLogin: login });
  }

  /** Team name and slug and the creator's login of each run given. */
  async holderNames(runs: RunEntity[]): Promise<Map<string, HolderNames>> {
    if (runs.length === 0) return new Map();
    const rows = await this.dataSource.query<
      { id: string; team_name: string | null; team_slug: string | null; user_login: string | null }[]
    >(
      `SELECT r.id::text AS id, t.name AS team_name, t.slug AS team_slug, u.login AS user_login
         FROM runs r LEFT JOIN teams t ON t.id = r.team_id LEFT JOIN users u ON u.id = r.created_by
        WHERE r.id = ANY($1::uuid[])`,
      [runs.map((r) => r.id)],
    );
    return new Map(
      rows.map((r) => [r.id, { teamName: r.team_name, teamSlug: r.team_slug, userLogin: r.user_login }]),
    );
  }

  /**
   * Each holder's best run to re-run in bulk: the best succeeded, not disqualified official run of
   * the team itself (no re-run), on a ranked tier where the benchmark has tiers, under the newest
   * rules version the holder has one in. After a rules bump the current board is empty (older
   * results are invalidated), and a re-run is how the same code is measured under the new rules;
   * the order within a holder is the live board's (score, then who got there first).
   */
  bestPerHolder(
    benchmarkId: string,
    rankedTiers: string[],
    holderColumn: 'team_id' | 'created_by',
  ): Promise<{ run_id: string }[]> {
    return this.dataSource.query<{ run_id: string }[]>(
      `SELECT * FROM (
         SELECT DISTINCT ON (${holderColumn}) id AS run_id, score, finished_at FROM runs
          WHERE benchmark_id = $1 AND mode = 'official' AND status = 'succeeded' AND rerun_of IS NULL
            AND disqualified_at IS NULL AND score IS NOT NULL AND submission_id IS NOT NULL
            AND (cardinality($2::text[]) = 0 OR tier = ANY($2::text[]))
          ORDER BY ${holderColumn}, rules_version DESC, score DESC, finished_at ASC, id ASC
       ) b ORDER BY score DESC, finished_at ASC, run_id ASC`,
      [benchmarkId, rankedTiers],
    );
  }
}
