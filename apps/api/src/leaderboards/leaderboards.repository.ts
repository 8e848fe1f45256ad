import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import type { LeaderboardView, ScoreInterval } from '@dryft/libs';
import { FinalBoardEntity } from './final-board.entity';

export interface BestRow {
  holder: string;
  run_id: string;
  team_id: string;
  created_by: string;
  score: number;
  score_interval: ScoreInterval | null;
  pairs: number | null;
  finished_at: Date;
}

/** A best row with its holder's names (null where the team or user no longer exists). */
export interface NamedBestRow extends BestRow {
  team_name: string | null;
  team_slug: string | null;
  user_login: string | null;
}

export interface RaiseRow {
  benchmark_id: string;
  run_id: string;
  score: number;
  finished_at: Date;
  rules_version: number;
}

/** A raise as read, with the tier it ran on (filtered against the ranked tiers, then dropped). */
interface TieredRaiseRow extends RaiseRow {
  tier: string | null;
}

/** A disqualified official result: its score, and the organizer's reason and time. */
export interface DisqualifiedRow {
  benchmark_id: string;
  run_id: string;
  score: number | null;
  reason: string;
  at: Date;
}

/**
 * The eligible official results of a benchmark under one rules version. A result is eligible when
 * the run is official, succeeded, has a score, was not invalidated, is the team's own (not an
 * organizer's re-run, which is shown next to its source and never ranks), and (for tiered
 * benchmarks) ran on a ranked tier.
 */
const ELIGIBLE = `benchmark_id = $1 AND rules_version = $2 AND mode = 'official' AND status = 'succeeded'
  AND rerun_of IS NULL AND NOT invalidated AND disqualified_at IS NULL AND score IS NOT NULL AND (cardinality($3::text[]) = 0 OR tier = ANY($3::text[]))`;

@Injectable()
export class LeaderboardsRepository {
  constructor(private readonly dataSource: DataSource) {}

  /** Each holder's best: highest score, then the earliest to reach it (ties go to who got there first). */
  best(
    benchmarkId: string,
    rulesVersion: number,
    rankedTiers: string[],
    holderColumn: 'team_id' | 'created_by',
  ): Promise<BestRow[]> {
    return this.dataSource.query<BestRow[]>(
      `SELECT * FROM (
         SELECT DISTINCT ON (${holderColumn}) ${holderColumn}::text AS holder, id AS run_id, team_id, created_by, score, score_interval, pairs, finished_at
           FROM runs WHERE ${ELIGIBLE}
          ORDER BY ${holderColumn}, score DESC, finished_at ASC, id ASC
       ) b ORDER BY score DESC, finished_at ASC, run_id ASC`,
      [benchmarkId, rulesVersion, rankedTiers],
    );
  }

  /**
   * {@link best} with the names a board shows (team name and slug, the participant's login), in one
   * query: the board is rebuilt before every live broadcast, and each round trip is latency every
   * spectator waits for.
   */
  bestNamed(
    benchmarkId: string,
    rulesVersion: number,
    rankedTiers: string[],
    holderColumn: 'team_id' | 'created_by',
  ): Promise<NamedBestRow[]> {
    return this.dataSource.query<NamedBestRow[]>(
      `SELECT b.*, t.name AS team_name, t.slug AS team_slug, u.login AS user_login FROM (
         SELECT DISTINCT ON (${holderColumn}) ${holderColumn}::text AS holder, id AS run_id, team_id, created_by, score, score_interval, pairs, finished_at
           FROM runs WHERE ${ELIGIBLE}
          ORDER BY ${holderColumn}, score DESC, finished_at ASC, id ASC
       ) b LEFT JOIN teams t ON t.id = b.team_id LEFT JOIN users u ON u.id = b.created_by
       ORDER BY b.score DESC, b.finished_at ASC, b.run_id ASC`,
      [benchmarkId, rulesVersion, rankedTiers],
    );
  }

  /** The benchmark's published final board, frozen as published (null: none). */
  finalBoard(benchmarkId: string): Promise<FinalBoardEntity | null> {
    return this.dataSource.getRepository(FinalBoardEntity).findOneBy({ benchmarkId });
  }

  /** When the benchmark's final board was published (one indexed read beside the live board's query). */
  async finalPublishedAt(benchmarkId: string): Promise<Date | null> {
    const rows = await this.dataSource.query<{ published_at: Date }[]>(
      'SELECT published_at FROM final_boards WHERE benchmark_id = $1',
      [benchmarkId],
    );
    return rows[0]?.published_at ?? null;
  }

  /** Publishes (or replaces) the benchmark's final board. */
  async publishFinal(row: {
    benchmarkId: string;
    batchId: string;
    board: LeaderboardView;
    publishedAt: Date;
  }) {
    await this.dataSource.getRepository(FinalBoardEntity).upsert(row, ['benchmarkId']);
  }

  /** A team's disqualified official results under the benchmarks' current rules, newest first. */
  disqualifiedForTeam(
    teamId: string,
    benchmarks: { id: string; rulesVersion: number }[],
  ): Promise<DisqualifiedRow[]> {
    if (benchmarks.length === 0) return Promise.resolve([]);
    return this.dataSource.query<DisqualifiedRow[]>(
      `SELECT r.benchmark_id, r.id AS run_id, r.score, r.disqualified_reason AS reason, r.disqualified_at AS at
         FROM runs r JOIN unnest($2::text[], $3::int[]) AS b(id, v) ON b.id = r.benchmark_id AND b.v = r.rules_version
        WHERE r.team_id = $1 AND r.disqualified_at IS NOT NULL
        ORDER BY r.disqualified_at DESC, r.id`,
      [teamId, benchmarks.map((b) => b.id), benchmarks.map((b) => b.rulesVersion)],
    );
  }

  /** Every result that raised the team's best, oldest first (the team page's chart). */
  raisesForTeam(
    teamId: string,
    benchmarks: { id: string; rulesVersion: number; rankedTiers: string[] }[],
  ): Promise<RaiseRow[]> {
    if (benchmarks.length === 0) return Promise.resolve([]);
    const ids = benchmarks.map((b) => b.id);
    return this.dataSource
      .query<TieredRaiseRow[]>(
        `SELECT benchmark_id, id AS run_id, score, finished_at, rules_version, tier FROM runs
          WHERE team_id = $1 AND benchmark_id = ANY($2) AND mode = 'official' AND status = 'succeeded'
            AND rerun_of IS NULL AND NOT invalidated AND disqualified_at IS NULL AND score IS NOT NULL
          ORDER BY finished_at ASC, id ASC`,
        [teamId, ids],
      )
      .then((rows) => {
        const out: RaiseRow[] = [];
        const best = new Map<string, number>();
        for (const r of rows) {
          const b = benchmarks.find((x) => x.id === r.benchmark_id)!;
          if (r.rules_version !== b.rulesVersion) continue;
          if (b.rankedTiers.length && !b.rankedTiers.includes(r.tier ?? '')) continue;
          if (r.score > (best.get(r.benchmark_id) ?? -Infinity)) {
            best.set(r.benchmark_id, r.score);
            out.push(r);
          }
        }
        return out;
      });
  }
}
