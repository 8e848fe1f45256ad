import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import type { ScoreInterval } from '@dryft/libs';

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

/**
 * The eligible official results of a benchmark under one rules version. A result is eligible when
 * the run is official, succeeded, has a score, was not invalidated, and (for tiered benchmarks)
 * ran on a ranked tier.
 */
const ELIGIBLE = `benchmark_id = $1 AND rules_version = $2 AND mode = 'official' AND status = 'succeeded'
  AND NOT invalidated AND disqualified_at IS NULL AND score IS NOT NULL AND (cardinality($3::text[]) = 0 OR tier = ANY($3::text[]))`;

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
    return this.dataSource.query(
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
    return this.dataSource.query(
      `SELECT b.*, t.name AS team_name, t.slug AS team_slug, u.login AS user_login FROM (
         SELECT DISTINCT ON (${holderColumn}) ${holderColumn}::text AS holder, id AS run_id, team_id, created_by, score, score_interval, pairs, finished_at
           FROM runs WHERE ${ELIGIBLE}
          ORDER BY ${holderColumn}, score DESC, finished_at ASC, id ASC
       ) b LEFT JOIN teams t ON t.id = b.team_id LEFT JOIN users u ON u.id = b.created_by
       ORDER BY b.score DESC, b.finished_at ASC, b.run_id ASC`,
      [benchmarkId, rulesVersion, rankedTiers],
    );
  }

  /** A team's disqualified official results under the benchmarks' current rules, newest first. */
  disqualifiedForTeam(
    teamId: string,
    benchmarks: { id: string; rulesVersion: number }[],
  ): Promise<{ benchmark_id: string; run_id: string; score: number | null; reason: string; at: Date }[]> {
    if (benchmarks.length === 0) return Promise.resolve([]);
    return this.dataSource.query(
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
      .query(
        `SELECT benchmark_id, id AS run_id, score, finished_at, rules_version, tier FROM runs
          WHERE team_id = $1 AND benchmark_id = ANY($2) AND mode = 'official' AND status = 'succeeded'
            AND NOT invalidated AND disqualified_at IS NULL AND score IS NOT NULL
          ORDER BY finished_at ASC, id ASC`,
        [teamId, ids],
      )
      .then((rows: (RaiseRow & { tier: string | null })[]) => {
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
