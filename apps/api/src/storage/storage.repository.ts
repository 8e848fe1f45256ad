import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';

/** One team's stored data and quota use, as Postgres answers it (counts and sums are bigint text). */
export interface TeamStorageRow {
  id: string;
  name: string;
  slug: string;
  runs: string;
  log_lines: string;
  log_bytes: string;
  submissions: string;
  artifact_bytes: string;
  uploads_today: string;
  queued_runs: string;
}

/** What each team stores (log text of its runs, uploaded artifacts) and its use against the quotas. */
@Injectable()
export class StorageRepository {
  constructor(private readonly dataSource: DataSource) {}

  /** Every team, with zeros where it has no runs or submissions; `uploads_today` counts from `since`. */
  teamUsage(since: Date): Promise<TeamStorageRow[]> {
    return this.dataSource.query<TeamStorageRow[]>(
      `SELECT t.id, t.name, t.slug,
              coalesce(r.runs, 0) AS runs, coalesce(r.log_lines, 0) AS log_lines, coalesce(r.log_bytes, 0) AS log_bytes,
              coalesce(s.submissions, 0) AS submissions, coalesce(s.artifact_bytes, 0) AS artifact_bytes,
              coalesce(s.uploads_today, 0) AS uploads_today, coalesce(r.queued_runs, 0) AS queued_runs
         FROM teams t
         LEFT JOIN (SELECT team_id, count(*) AS runs, sum(log_lines) AS log_lines, sum(log_bytes) AS log_bytes,
                           count(*) FILTER (WHERE status = 'queued') AS queued_runs
                      FROM runs GROUP BY team_id) r ON r.team_id = t.id
         LEFT JOIN (SELECT team_id, count(*) AS submissions, sum(size_bytes) AS artifact_bytes,
                           count(*) FILTER (WHERE created_at >= $1) AS uploads_today
                      FROM submissions GROUP BY team_id) s ON s.team_id = t.id`,
      [since],
    );
  }
}
