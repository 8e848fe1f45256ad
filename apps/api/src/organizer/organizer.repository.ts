import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { RunEntity } from '../runs/run.entity';

/** A row of the official results export (snake_case as the database answers). */
export interface ResultRow {
  run_id: string;
  team_id: string;
  team_name: string;
  team_slug: string;
  created_by: string;
  submitted_by: string;
  score: number;
  run_rules_version: number;
  tier: string | null;
  finished_at: Date;
  submission_id: string;
  sha256: string;
  disqualified_reason: string | null;
  members: string[] | null;
  interval_low?: number | null;
  interval_high?: number | null;
}

/** A team's display names, for a page of runs. */
interface TeamNameRow {
  id: string;
  name: string;
  slug: string;
}

interface SubmissionShaRow {
  id: string;
  sha256: string;
}

interface ColumnNameRow {
  column_name: string;
}

/**
 * Where a score's 95 % interval may be stored on `runs`, depending on the hub's version: a jsonb
 * `score_interval` ({low, high, …}), or a pair of numeric columns. The first that exists is read;
 * with none, the export leaves the interval out.
 */
const INTERVAL_SOURCES: { columns: string[]; select: string }[] = [
  {
    columns: ['score_interval'],
    select: `(r.score_interval->>'low')::float8 AS interval_low, (r.score_interval->>'high')::float8 AS interval_high`,
  },
  ...[
    ['score_low', 'score_high'],
    ['score_ci_low', 'score_ci_high'],
    ['interval_low', 'interval_high'],
  ].map(([lo, hi]) => ({ columns: [lo, hi], select: `r.${lo} AS interval_low, r.${hi} AS interval_high` })),
];

/**
 * The organizer console's reads (runs across teams, the results export). A run's changes, its
 * disqualification included, are {@link RunQueue}'s: it is the only writer of a run's state.
 */
@Injectable()
export class OrganizerRepository {
  private intervalSelect: Promise<string | null> | undefined;

  constructor(private readonly dataSource: DataSource) {}

  findRun(runId: string): Promise<RunEntity | null> {
    return this.dataSource.getRepository(RunEntity).findOneBy({ id: runId });
  }

  /** Every run across teams, newest first, filtered as the organizer asks. */
  listRuns(opts: {
    benchmarkId?: string;
    status?: string;
    failureCode?: string;
    teamId?: string;
    since?: Date;
    until?: Date;
    id?: string;
    before?: { createdAt: Date; id: string };
    limit: number;
  }): Promise<RunEntity[]> {
    // Baseline re-measures are no team's runs: the benchmark's baselines view lists them.
    const qb = this.dataSource
      .getRepository(RunEntity)
      .createQueryBuilder('r')
      .where("r.mode NOT IN ('baseline', 'calibration')");
    if (opts.benchmarkId) qb.andWhere('r.benchmark_id = :b', { b: opts.benchmarkId });
    if (opts.status) qb.andWhere('r.status = :s', { s: opts.status });
    if (opts.failureCode) qb.andWhere('r.failure_code = :f', { f: opts.failureCode });
    if (opts.teamId) qb.andWhere('r.team_id = :t', { t: opts.teamId });
    if (opts.since) qb.andWhere('r.created_at >= :since', { since: opts.since });
    if (opts.until) qb.andWhere('r.created_at < :until', { until: opts.until });
    if (opts.id) qb.andWhere('(r.id = :id OR r.submission_id = :id)', { id: opts.id });
    if (opts.before)
      qb.andWhere('(r.created_at, r.id) < (:c, :i)', { c: opts.before.createdAt, i: opts.before.id });
    return qb.orderBy('r.created_at', 'DESC').addOrderBy('r.id', 'DESC').limit(opts.limit).getMany();
  }

  /** Team name and slug, and each submission's sha256, for a page of runs. */
  async runContext(
    runs: RunEntity[],
  ): Promise<{ teams: Map<string, { name: string; slug: string }>; sha: Map<string, string> }> {
    const teams = await this.dataSource.query<TeamNameRow[]>(
      'SELECT id, name, slug FROM teams WHERE id = ANY($1)',
      [[...new Set(runs.map((r) => r.teamId))]],
    );
    const subs = await this.dataSource.query<SubmissionShaRow[]>(
      'SELECT id, sha256 FROM submissions WHERE id = ANY($1)',
      [[...new Set(runs.map((r) => r.submissionId))]],
    );
    return {
      teams: new Map(teams.map((t) => [t.id, { name: t.name, slug: t.slug }])),
      sha: new Map(subs.map((s) => [s.id, s.sha256])),
    };
  }

  /**
   * Every official scored result of a benchmark under a rules version (disqualified ones included and
   * marked; an organizer's re-runs left out: they are no team's result), with team, members, submitter and the submission's sha256; best first.
   */
  async officialResults(
    benchmarkId: string,
    rulesVersion: number,
    rankedTiers: string[],
  ): Promise<ResultRow[]> {
    const interval = await this.intervalSource();
    const extra = interval ? `, ${interval}` : '';
    return this.dataSource.query<ResultRow[]>(
      `SELECT r.id AS run_id, r.team_id, t.name AS team_name, t.slug AS team_slug, r.created_by,
              u.login AS submitted_by, r.score, r.rules_version AS run_rules_version, r.tier, r.finished_at,
              r.submission_id, s.sha256, r.disqualified_reason,
              (SELECT array_agg(mu.login ORDER BY m.joined_at) FROM memberships m JOIN users mu ON mu.id = m.user_id
                WHERE m.team_id = r.team_id) AS members${extra}
         FROM runs r
         JOIN teams t ON t.id = r.team_id
         JOIN users u ON u.id = r.created_by
         JOIN submissions s ON s.id = r.submission_id
        WHERE r.benchmark_id = $1 AND r.rules_version = $2 AND r.mode = 'official' AND r.status = 'succeeded'
          AND NOT r.invalidated AND r.score IS NOT NULL AND r.rerun_of IS NULL
          AND (cardinality($3::text[]) = 0 OR r.tier = ANY($3::text[]))
        ORDER BY r.score DESC, r.finished_at ASC, r.id ASC`,
      [benchmarkId, rulesVersion, rankedTiers],
    );
  }

  private intervalSource(): Promise<string | null> {
    this.intervalSelect ??= this.dataSource
      .query<ColumnNameRow[]>(
        `SELECT column_name FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = 'runs'`,
      )
      .then((rows) => {
        const names = new Set(rows.map((r) => r.column_name));
        return INTERVAL_SOURCES.find((src) => src.columns.every((c) => names.has(c)))?.select ?? null;
      });
    return this.intervalSelect;
  }
}
