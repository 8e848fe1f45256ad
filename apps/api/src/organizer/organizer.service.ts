import { Injectable } from '@nestjs/common';
import { stringify } from 'csv-stringify/sync';
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
import { RunViews } from '../runs/run-views';
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
    private readonly runs: RunViews,
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

  /** Gives a run back to its team's (or user's) daily limit, with a reason; the team sees it refunded. */
  async refund(principal: Principal, runId: string, reason: string): Promise<RunView> {
    const run = await this.findRun(runId);
    if (!run.teamId)
      throw conflict(
        'not_a_team_run',
        `Run ${runId} is a ${run.mode} run of no team; it counts against no daily limit.`,
      );
    if (run.rerunOf)
      throw conflict(
        'not_a_team_run',
        `Run ${runId} is an organizer's re-run of ${run.rerunOf}; it counts against no daily limit, so there is nothing to refund.`,
      );
    if (run.quotaRefunded)
      throw conflict(
        'already_refunded',
        `Run ${runId} is refunded already; it does not count against the daily limit.`,
      );
    const changed = await this.queue.refund(runId);
    if (!changed) throw conflict('already_refunded', `Run ${runId} was refunded meanwhile.`);
    const view = await this.runs.view(changed);
    await this.audit.record(principal, {
      action: 'run.refund',
      target: { kind: 'run', id: run.id },
      benchmarkId: run.benchmarkId,
      reason,
      details: { teamId: run.teamId, bucket: run.quotaBucket, day: run.quotaDay, status: run.status },
    });
    this.bus.emit('run.status', { run: view });
    return view;
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

  /**
   * One run as organizers see it (any run, re-measures and calibrations included): the run view
   * plus its team, its submission's digest and (official decode runs) the hidden prompts' nonce.
   */
  async getRun(runId: string): Promise<AdminRunView> {
    const run = await this.findRun(runId);
    const ctx = await this.repo.runContext([run]);
    const team = run.teamId ? ctx.teams.get(run.teamId) : undefined;
    return {
      ...(await this.runs.view(run)),
      teamName: team?.name ?? (run.teamId ? 'unknown' : 'none'),
      teamSlug: team?.slug ?? (run.teamId ? 'unknown' : 'none'),
      submissionSha256: (run.submissionId && ctx.sha.get(run.submissionId)) || '',
      promptNonce: run.promptNonce,
    };
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
    const [ctx, views] = await Promise.all([this.repo.runContext(page), this.runs.views(page)]);
    const items = page.map((r, i) => {
      const team = r.teamId ? ctx.teams.get(r.teamId) : undefined;
      return {
        ...views[i],
        teamName: team?.name ?? 'unknown',
        teamSlug: team?.slug ?? 'unknown',
        submissionSha256: (r.submissionId && ctx.sha.get(r.submissionId)) || '',
        promptNonce: r.promptNonce,
      };
    });
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

/**
 * RFC 4180 CSV through csv-stringify: a header, then one line per row (CRLF); members joined with ";".
 * Formula escaping: a text cell that starts with = + - @ tab or CR gets a leading `'`, so a team
 * named `=HYPERLINK(…)` is shown as text by a spreadsheet, never run (numbers such as -1.5 stay numbers).
 */
export function toCsv(rows: ExportRow[]): string {
  const withInterval = rows.some((r) => 'intervalLow' in r);
  const cols = CSV_COLUMNS.filter((c) => withInterval || (c !== 'intervalLow' && c !== 'intervalHigh'));
  const records = rows.map((r) =>
    Object.fromEntries(cols.map((c) => [c, Array.isArray(r[c]) ? r[c].join(';') : r[c]])),
  );
  return stringify(records, {
    header: true,
    columns: cols,
    record_delimiter: 'windows',
    // csv-stringify quotes a cell holding its own record delimiter (CRLF) but not a bare LF or CR,
    // which RFC 4180 readers take as the end of the row: quote any line break.
    quoted_match: /[\r\n]/,
    escape_formulas: true,
    cast: { boolean: (v) => String(v) },
  });
}
