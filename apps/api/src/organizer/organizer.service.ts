import { Injectable } from '@nestjs/common';
import type { AdminRunView, AdminRunsQuery, ExportRow, RunView } from '@dryft/libs';
import { AuditService } from '../audit/audit.service';
import { BenchmarksService, EffectiveBenchmark } from '../benchmarks/benchmarks.service';
import { Clock } from '../common/clock';
import { decodeCursor, encodeCursor } from '../common/cursor';
import { conflict, notFound } from '../common/errors';
import { EventBus } from '../common/event-bus';
import type { Principal } from '../common/principal';
import { LeaderboardsService } from '../leaderboards/leaderboards.service';
import type { RunEntity } from '../runs/run.entity';
import { RunQueue } from '../runs/run-queue';
import { RunsService } from '../runs/runs.service';
import { TeamsService } from '../teams/teams.service';
import { OrganizerRepository, ResultRow } from './organizer.repository';

const rankedTiers = (b: EffectiveBenchmark): string[] =>
  b.kind === 'training' ? b.tiers.filter((t) => t.ranked).map((t) => t.id) : [];

/** The organizer's console: disqualifications, every run across teams, and the results export. */
@Injectable()
export class OrganizerService {
  constructor(
    private readonly repo: OrganizerRepository,
    private readonly queue: RunQueue,
    private readonly runs: RunsService,
    private readonly benchmarks: BenchmarksService,
    private readonly boards: LeaderboardsService,
    private readonly teams: TeamsService,
    private readonly audit: AuditService,
    private readonly clock: Clock,
    private readonly bus: EventBus,
  ) {}

  /** Takes an official result off the leaderboard at once; the team's best is recomputed from the rest. */
  async disqualify(principal: Principal, runId: string, reason: string): Promise<RunView> {
    const run = await this.findRun(runId);
    if (run.disqualifiedAt)
      throw conflict(
        'already_disqualified',
        `Run ${runId} was already disqualified on ${run.disqualifiedAt.toISOString()}: ${run.disqualifiedReason}.`,
      );
    if (run.mode !== 'official' || run.status !== 'succeeded')
      throw conflict(
        'not_an_official_result',
        `Only a succeeded official run is a result that can be disqualified; run ${runId} is a ${run.status} ${run.mode} run.`,
      );
    const changed = await this.queue.disqualify(runId, {
      by: principal.user.id,
      reason,
      at: this.clock.now(),
    });
    if (!changed) throw conflict('already_disqualified', `Run ${runId} was disqualified meanwhile.`);
    return this.after(principal, changed, 'run.disqualify', reason);
  }

  /** Reverses a disqualification: the result counts again (if it still fits the current rules). */
  async requalify(principal: Principal, runId: string, reason: string): Promise<RunView> {
    await this.findRun(runId);
    const changed = await this.queue.requalify(runId);
    if (!changed) throw conflict('not_disqualified', `Run ${runId} is not disqualified; nothing to reverse.`);
    return this.after(principal, changed, 'run.requalify', reason);
  }

  private async after(
    principal: Principal,
    run: RunEntity,
    action: 'run.disqualify' | 'run.requalify',
    reason: string,
  ): Promise<RunView> {
    const view = await this.runs.view(run);
    await this.audit.record(principal, {
      action,
      target: { kind: 'run', id: run.id },
      benchmarkId: run.benchmarkId,
      reason,
      details: { teamId: run.teamId, score: run.score, rulesVersion: run.rulesVersion },
    });
    this.bus.emit('run.status', { run: view });
    this.bus.emit('leaderboard.changed', { benchmarkId: run.benchmarkId });
    return view;
  }

  private async findRun(runId: string): Promise<RunEntity> {
    const run = await this.repo.findRun(runId);
    if (!run) throw notFound('run_not_found', `No run ${runId}.`);
    return run;
  }

  async listRuns(q: AdminRunsQuery): Promise<{ items: AdminRunView[]; nextCursor: string | null }> {
    if (q.benchmark) await this.benchmarks.get(q.benchmark);
    let teamId: string | undefined;
    if (q.team) {
      const team = await this.teams.findBySlug(q.team);
      if (!team) throw notFound('team_not_found', `No team with slug "${q.team}".`);
      teamId = team.id;
    }
    const rows = await this.repo.listRuns({
      benchmarkId: q.benchmark,
      status: q.status,
      failureCode: q.failureCode,
      teamId,
      since: q.since ? new Date(q.since) : undefined,
      until: q.until ? new Date(q.until) : undefined,
      id: q.q?.toLowerCase(),
      before: decodeCursor(q.cursor),
      limit: q.limit + 1,
    });
    const page = rows.slice(0, q.limit);
    const ctx = await this.repo.runContext(page);
    const items = await Promise.all(
      page.map(async (r) => {
        const team = r.teamId ? ctx.teams.get(r.teamId) : undefined;
        return {
          ...(await this.runs.view(r)),
          teamName: team?.name ?? 'unknown',
          teamSlug: team?.slug ?? 'unknown',
          submissionSha256: (r.submissionId && ctx.sha.get(r.submissionId)) || '',
        };
      }),
    );
    const last = page[page.length - 1];
    return {
      items,
      nextCursor: rows.length > q.limit && last ? encodeCursor(last.createdAt, last.id) : null,
    };
  }

  /**
   * The leaderboard (each holder's best, in rank order) or every official result under the current
   * rules version (disqualified ones marked), for prizes and papers.
   */
  async export(
    benchmarkId: string,
    what: 'leaderboard' | 'results',
  ): Promise<{ rulesVersion: number; rows: ExportRow[] }> {
    const b = await this.benchmarks.get(benchmarkId);
    const [board, results] = await Promise.all([
      this.boards.get(b.id),
      this.repo.officialResults(b.id, b.rulesVersion, rankedTiers(b)),
    ]);
    const rankOf = new Map(board.entries.map((e) => [e.runId, e.rank]));
    const rows = results.map((r) => exportRow(r, rankOf.get(r.run_id) ?? null));
    if (what === 'results') return { rulesVersion: b.rulesVersion, rows };
    return {
      rulesVersion: b.rulesVersion,
      rows: rows.filter((r) => r.rank !== null).sort((a, z) => a.rank! - z.rank!),
    };
  }
}

function exportRow(r: ResultRow, rank: number | null): ExportRow {
  const row: ExportRow = {
    rank,
    team: r.team_name,
    teamSlug: r.team_slug,
    members: r.members ?? [],
    submittedBy: r.submitted_by,
    score: Number(r.score),
    runId: r.run_id,
    submissionId: r.submission_id,
    submissionSha256: r.sha256,
    rulesVersion: r.run_rules_version,
    tier: r.tier,
    finishedAt: new Date(r.finished_at).toISOString(),
    disqualified: r.disqualified_reason !== null,
    disqualifiedReason: r.disqualified_reason,
  };
  if ('interval_low' in r) {
    row.intervalLow = r.interval_low === null ? null : Number(r.interval_low);
    row.intervalHigh =
      r.interval_high === null || r.interval_high === undefined ? null : Number(r.interval_high);
  }
  return row;
}

const CSV_COLUMNS: (keyof ExportRow)[] = [
  'rank',
  'team',
  'teamSlug',
  'members',
  'submittedBy',
  'score',
  'intervalLow',
  'intervalHigh',
  'runId',
  'submissionId',
  'submissionSha256',
  'rulesVersion',
  'tier',
  'finishedAt',
  'disqualified',
  'disqualifiedReason',
];

/** RFC 4180 CSV: a header, then one line per row; members joined with ";". */
export function toCsv(rows: ExportRow[]): string {
  const withInterval = rows.some((r) => 'intervalLow' in r);
  const cols = CSV_COLUMNS.filter((c) => withInterval || (c !== 'intervalLow' && c !== 'intervalHigh'));
  const cell = (v: unknown): string => {
    const s = v === null || v === undefined ? '' : Array.isArray(v) ? v.join(';') : String(v);
    return /[",\r\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
  };
  return [cols.join(','), ...rows.map((r) => cols.map((c) => cell(r[c])).join(','))].join('\r\n') + '\r\n';
}
