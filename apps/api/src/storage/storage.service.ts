import { Inject, Injectable } from '@nestjs/common';
import type { StorageView } from '@dryft/libs';
import { Clock } from '../common/clock';
import { CONFIG, Config } from '../config/config';
import { utcDay } from '../runs/run-options';
import { StorageRepository } from './storage.repository';

/**
 * Organizers see what each team stores, log text (capped per run) and uploaded artifacts, and its
 * use against the hub's quotas: submissions today (since the last UTC midnight), stored bytes, runs
 * waiting. The largest team comes first.
 */
@Injectable()
export class StorageService {
  constructor(
    private readonly repo: StorageRepository,
    private readonly clock: Clock,
    @Inject(CONFIG) private readonly config: Config,
  ) {}

  async view(): Promise<StorageView> {
    const { day, resetsAt } = utcDay(this.clock.now());
    const rows = await this.repo.teamUsage(new Date(`${day}T00:00:00.000Z`));
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
          uploadsToday: Number(r.uploads_today),
          queuedRuns: Number(r.queued_runs),
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
      limits: {
        uploadsPerDay: this.config.TEAM_UPLOADS_PER_DAY,
        storageLimitBytes: Math.floor(this.config.TEAM_STORAGE_MIB * 1024 * 1024),
        publicRunsPerDay: this.config.TEAM_PUBLIC_RUNS_PER_DAY,
        queuedRuns: this.config.TEAM_QUEUED_RUNS,
        resetsAt: resetsAt.toISOString(),
      },
    };
  }
}
