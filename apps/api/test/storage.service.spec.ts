import { describe, expect, it, vi } from 'vitest';
import type { Clock } from '../src/common/clock';
import type { Config } from '../src/config/config';
import type { StorageRepository, TeamStorageRow } from '../src/storage/storage.repository';
import { StorageService } from '../src/storage/storage.service';

function row(over: Partial<TeamStorageRow> & Pick<TeamStorageRow, 'id' | 'name'>): TeamStorageRow {
  return {
    slug: over.name.toLowerCase(),
    runs: '0',
    log_lines: '0',
    log_bytes: '0',
    submissions: '0',
    artifact_bytes: '0',
    uploads_today: '0',
    queued_runs: '0',
    ...over,
  };
}

function setup(rows: TeamStorageRow[], now = new Date('2026-03-04T15:30:00.000Z')) {
  const repo = { teamUsage: vi.fn(async () => rows) };
  const clock = { now: () => now } as Clock;
  const config = {
    TEAM_UPLOADS_PER_DAY: 20,
    TEAM_STORAGE_MIB: 1.5,
    TEAM_PUBLIC_RUNS_PER_DAY: 10,
    TEAM_QUEUED_RUNS: 3,
  } as Config;
  return { service: new StorageService(repo as unknown as StorageRepository, clock, config), repo };
}

describe('StorageService.view', () => {
  it('counts uploads from the last UTC midnight and states the quotas with their reset', async () => {
    const { service, repo } = setup([]);
    const view = await service.view();
    expect(repo.teamUsage).toHaveBeenCalledWith(new Date('2026-03-04T00:00:00.000Z'));
    expect(view).toEqual({
      teams: [],
      totals: { logBytes: 0, artifactBytes: 0, logLines: 0 },
      limits: {
        uploadsPerDay: 20,
        storageLimitBytes: 1572864,
        publicRunsPerDay: 10,
        queuedRuns: 3,
        resetsAt: '2026-03-05T00:00:00.000Z',
      },
    });
  });

  it('turns the bigint text into numbers, adds log and artifact bytes, and puts the largest team first', async () => {
    const { service } = setup([
      row({ id: 't1', name: 'Beta', log_bytes: '100', artifact_bytes: '50', log_lines: '4' }),
      row({ id: 't2', name: 'Gamma', log_bytes: '10', artifact_bytes: '900', runs: '2', queued_runs: '1' }),
      row({
        id: 't3',
        name: 'Alpha',
        log_bytes: '150',
        submissions: '3',
        uploads_today: '2',
        log_lines: '6',
      }),
    ]);
    const view = await service.view();
    // Gamma stores 910 bytes; Alpha and Beta 150 each, in name order.
    expect(view.teams.map((t) => t.name)).toEqual(['Gamma', 'Alpha', 'Beta']);
    expect(view.teams[0]).toEqual({
      teamId: 't2',
      name: 'Gamma',
      slug: 'gamma',
      runs: 2,
      logLines: 0,
      logBytes: 10,
      submissions: 0,
      artifactBytes: 900,
      totalBytes: 910,
      uploadsToday: 0,
      queuedRuns: 1,
    });
    expect(view.teams[1]).toMatchObject({ submissions: 3, uploadsToday: 2, totalBytes: 150 });
    expect(view.totals).toEqual({ logBytes: 260, artifactBytes: 950, logLines: 10 });
  });
});
