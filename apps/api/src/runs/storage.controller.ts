import { Controller, Get, UseGuards } from '@nestjs/common';
import type { StorageView } from '@dryft/libs';
import { DataSource } from 'typeorm';
import { AdminGuard } from '../common/admin.guard';

/** Organizers see what each team stores: log text (capped per run) and uploaded artifacts. */
@Controller()
export class StorageController {
  constructor(private readonly dataSource: DataSource) {}

  @UseGuards(AdminGuard)
  @Get('api/admin/storage')
  async storage(): Promise<StorageView> {
    const rows: {
      id: string;
      name: string;
      slug: string;
      runs: string;
      log_lines: string;
      log_bytes: string;
      submissions: string;
      artifact_bytes: string;
    }[] = await this.dataSource.query(
      `SELECT t.id, t.name, t.slug,
              coalesce(r.runs, 0) AS runs, coalesce(r.log_lines, 0) AS log_lines, coalesce(r.log_bytes, 0) AS log_bytes,
              coalesce(s.submissions, 0) AS submissions, coalesce(s.artifact_bytes, 0) AS artifact_bytes
         FROM teams t
         LEFT JOIN (SELECT team_id, count(*) AS runs, sum(log_lines) AS log_lines, sum(log_bytes) AS log_bytes
                      FROM runs GROUP BY team_id) r ON r.team_id = t.id
         LEFT JOIN (SELECT team_id, count(*) AS submissions, sum(size_bytes) AS artifact_bytes
                      FROM submissions GROUP BY team_id) s ON s.team_id = t.id`,
    );
    const teams = rows
      .map((r) => {
        const logBytes = Number(r.log_bytes);
        const artifactBytes = Number(r.artifact_bytes);
        return {
          teamId: r.id,
          name: r.name,
          slug: r.slug,
          runs: Number(r.runs),
          logLines: Number(r.log_lines),
          logBytes,
          submissions: Number(r.submissions),
          artifactBytes,
          totalBytes: logBytes + artifactBytes,
        };
      })
      .sort((a, b) => b.totalBytes - a.totalBytes || a.name.localeCompare(b.name));
    return {
      teams,
      totals: {
        logBytes: teams.reduce((n, t) => n + t.logBytes, 0),
        artifactBytes: teams.reduce((n, t) => n + t.artifactBytes, 0),
        logLines: teams.reduce((n, t) => n + t.logLines, 0),
      },
    };
  }
}
