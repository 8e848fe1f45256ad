import { Injectable, Logger, OnApplicationBootstrap, OnModuleDestroy } from '@nestjs/common';
import type {
  FinalBoardAdminView,
  LeaderboardView,
  RerunBatchView,
  RerunPairView,
  RunStatus,
} from '@dryft/libs';
import { DEFAULT_FINAL_BOARD, TERMINAL_STATUSES } from '@dryft/libs';
import { AuditService } from '../audit/audit.service';
import { BenchmarksService, EffectiveBenchmark } from '../benchmarks/benchmarks.service';
import { Clock } from '../common/clock';
import { AppError, conflict, notFound } from '../common/errors';
import { EventBus } from '../common/event-bus';
import { LeaderboardsService } from '../leaderboards/leaderboards.service';
import { chooseRun, utcDay } from '../runs/run-options';
import { RunViews } from '../runs/run-views';
import type { RunEntity } from '../runs/run.entity';
import { buildFinalBoard, VerifiedHolder } from './final-board';
import type { RerunBatchEntity } from './rerun-batch.entity';
import { RerunsRepository } from './reruns.repository';

/** Who asks: the signed-in organizer, or (a scheduled close) the organizer who scheduled it. */
export interface Actor {
  user: { id: string; login: string };
}

/**
 * The daily-limit bucket of every re-run. No limit reads it (the buckets are the definition's
 * modes and tiers), so a re-run never takes a team's run, and QuotaView stays the team's own: its
 * `used` counts only runs the team started and its `refunded` only runs given back to it (marking
 * re-runs refunded instead would have shown organizer work as refunds on the team's quota).
 */
export const RERUN_BUCKET = 'rerun';

const rankedTiers = (b: EffectiveBenchmark): string[] =>
  b.kind === 'training' ? b.tiers.filter((t) => t.ranked).map((t) => t.id) : [];

const holderKey = (b: EffectiveBenchmark, run: RunEntity): string =>
  b.ranks === 'users' ? `u:${run.createdBy}` : `t:${run.teamId}`;

/**
 * The organizer's re-runs (one run, or every eligible best run of a benchmark) and the verified
 * final board (the top k best runs re-run m times each, ranked by the median, published by the
 * organizer). A re-run is a new run of the same submission and mode linked to its source
 * (`rerun_of`): it goes after team runs in dispatch, counts against no daily limit nor the team's
 * queued-runs limit, and never ranks on the live board (it is shown next to its source).
 */
@Injectable()
export class RerunsService implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger('Reruns');
  private readonly unsubscribe: (() => void)[] = [];

  constructor(
    private readonly repo: RerunsRepository,
    private readonly benchmarks: BenchmarksService,
    private readonly boards: LeaderboardsService,
    private readonly views: RunViews,
    private readonly audit: AuditService,
    private readonly clock: Clock,
    private readonly bus: EventBus,
  ) {}

  onApplicationBootstrap(): void {
    this.unsubscribe.push(this.bus.on('round.closed', (e) => this.onRoundClosed(e)));
  }

  onModuleDestroy(): void {
    for (const u of this.unsubscribe) u();
  }

  /** One run again: the same submission and mode, fresh prompts unless `replayPrompts`. */
  async rerunRun(
    actor: Actor,
    runId: string,
    body: { reason: string; replayPrompts: boolean },
  ): Promise<{ runId: string; batch: RerunBatchView }> {
    const source = await this.repo.findRun(runId);
    if (!source) throw notFound('run_not_found', `No run ${runId}.`);
    if (!source.submissionId || !source.teamId)
      throw conflict(
        'no_submission',
        `Run ${runId} is a ${source.mode} run of no submission; re-measure the baseline (POST /api/admin/benchmarks/${source.benchmarkId}/baselines/remeasure) instead.`,
      );
    if (body.replayPrompts && source.mode !== 'official')
      throw conflict(
        'no_stored_nonce',
        `Run ${runId} is a ${source.mode} run: it drew no hidden prompts, so there are none to replay. Re-run it without replayPrompts.`,
      );
    if (body.replayPrompts && !source.promptNonce)
      throw conflict(
        'no_stored_nonce',
        `Run ${runId} has no stored prompt nonce (it ${source.status === 'succeeded' ? 'was measured before nonces were kept' : `is ${source.status}`}); re-run it without replayPrompts to draw fresh prompts.`,
      );
    const b = await this.benchmarks.get(source.benchmarkId);
    const { batch, runs } = await this.queueBatch(actor, b, {
      kind: 'single',
      reason: body.reason,
      replayPrompts: body.replayPrompts,
      sources: [source],
      times: 1,
    });
    await this.audit.record(actor, {
      action: 'run.rerun',
      target: { kind: 'run', id: source.id },
      benchmarkId: b.id,
      reason: body.reason,
      details: {
        rerunId: runs[0].id,
        batchId: batch.id,
        mode: source.mode,
        teamId: source.teamId,
        replayPrompts: body.replayPrompts,
      },
    });
    return { runId: runs[0].id, batch: (await this.batchViews(b, [batch]))[0] };
  }

  /** Every eligible best run of a benchmark again (after a rules bump or an agent fleet change). */
  async rerunBest(actor: Actor, benchmarkId: string, reason: string): Promise<RerunBatchView> {
    const b = await this.benchmarks.get(benchmarkId);
    const best = await this.repo.bestPerHolder(
      b.id,
      rankedTiers(b),
      b.ranks === 'users' ? 'created_by' : 'team_id',
    );
    if (best.length === 0)
      throw conflict(
        'no_eligible_runs',
        `${b.title} has no succeeded, not disqualified official run to re-run; nothing was queued.`,
      );
    const sources = await this.inOrder(best.map((r) => r.run_id));
    const { batch, runs } = await this.queueBatch(actor, b, {
      kind: 'bulk',
      reason,
      replayPrompts: false,
      sources,
      times: 1,
    });
    await this.audit.record(actor, {
      action: 'benchmark.rerun_best',
      target: { kind: 'benchmark', id: b.id },
      benchmarkId: b.id,
      reason,
      details: { batchId: batch.id, runs: runs.length, sourceRunIds: sources.map((s) => s.id) },
    });
    return (await this.batchViews(b, [batch]))[0];
  }

  /** A benchmark's re-run requests, newest first, with their progress and each pair's scores. */
  async listBatches(benchmarkId: string): Promise<{ items: RerunBatchView[] }> {
    const b = await this.benchmarks.get(benchmarkId);
    return { items: await this.batchViews(b, await this.repo.batches(b.id, 50)) };
  }

  /**
   * Starts the verified final board: the live board's top k best runs, m re-runs each (k and m from
   * the definition's `finalBoard`, else 10 and 3), drawing fresh prompts. One per rules version.
   */
  async startFinalBoard(actor: Actor, benchmarkId: string, reason: string): Promise<FinalBoardAdminView> {
    const b = await this.benchmarks.get(benchmarkId);
    const existing = await this.repo.finalBatch(b.id, b.rulesVersion);
    if (existing)
      throw conflict(
        'final_board_exists',
        `${b.title} already has a final board under rules version ${b.rulesVersion} (started ${existing.createdAt.toISOString()} by ${existing.createdByLogin}); read it with GET /api/admin/benchmarks/${b.id}/final-board.`,
        { batchId: existing.id },
      );
    const { topK, reruns } = b.finalBoard ?? DEFAULT_FINAL_BOARD;
    const best = (await this.boards.bestRuns(b.id)).slice(0, topK);
    if (best.length === 0)
      throw conflict(
        'no_eligible_runs',
        `${b.title}'s live board is empty: there is no best run to verify; nothing was queued.`,
      );
    const sources = await this.inOrder(best.map((r) => r.run_id));
    let queued: { batch: RerunBatchEntity; runs: RunEntity[] };
    try {
      queued = await this.queueBatch(actor, b, {
        kind: 'final',
        reason,
        replayPrompts: false,
        sources,
        times: reruns,
        topK,
      });
    } catch (err) {
      // Two starts at once (a scheduled close and the button): the unique index keeps one.
      if ((err as { code?: string }).code === '23505')
        throw conflict('final_board_exists', `${b.title}'s final board was started meanwhile.`);
      throw err;
    }
    await this.audit.record(actor, {
      action: 'final_board.start',
      target: { kind: 'benchmark', id: b.id },
      benchmarkId: b.id,
      reason,
      details: {
        batchId: queued.batch.id,
        topK,
        reruns,
        rulesVersion: b.rulesVersion,
        sourceRunIds: sources.map((s) => s.id),
      },
    });
    return this.finalBoardOf(b, queued.batch);
  }

  /** The final board under the current rules: the draft while unpublished, with its flags. */
  async finalBoard(benchmarkId: string): Promise<FinalBoardAdminView> {
    const b = await this.benchmarks.get(benchmarkId);
    const batch = await this.repo.finalBatch(b.id, b.rulesVersion);
    if (!batch)
      throw notFound(
        'final_board_not_started',
        `${b.title} has no final board under rules version ${b.rulesVersion}; start one with POST /api/admin/benchmarks/${b.id}/final-board.`,
      );
    return this.finalBoardOf(b, batch);
  }

  /** Publishes the final board once every re-run has finished; the live board stays as it is. */
  async publish(actor: Actor, benchmarkId: string, reason: string): Promise<FinalBoardAdminView> {
    const b = await this.benchmarks.get(benchmarkId);
    const view = await this.finalBoard(b.id);
    if (view.publishedAt)
      throw conflict(
        'final_board_published',
        `${b.title}'s final board was published on ${view.publishedAt} by ${view.publishedBy}.`,
      );
    if (!view.batch.done) {
      const { queued, running } = view.batch.counts;
      throw conflict(
        'final_board_incomplete',
        `${queued + running} of the final board's re-runs have not finished (${queued} queued, ${running} running); publish when every one has.`,
        view.batch.counts,
      );
    }
    const at = this.clock.now();
    const board: LeaderboardView = {
      ...view.board,
      board: 'final',
      updatedAt: at.toISOString(),
      finalPublishedAt: at.toISOString(),
    };
    await this.boards.publishFinal(b.id, view.batch.id, board, at);
    await this.repo.markPublished(view.batch.id, at, actor.user.login);
    await this.audit.record(actor, {
      action: 'final_board.publish',
      target: { kind: 'benchmark', id: b.id },
      benchmarkId: b.id,
      reason,
      details: {
        batchId: view.batch.id,
        entries: board.entries.map((e) => ({ rank: e.rank, name: e.name, score: e.score, runId: e.runId })),
        flags: view.flags,
      },
    });
    this.bus.emit('leaderboard.final_published', { benchmarkId: b.id, publishedAt: at.getTime() });
    // The live board now says a final one exists: spectators' pages offer it.
    this.bus.emit('leaderboard.changed', { benchmarkId: b.id });
    return { ...view, board, publishedAt: at.toISOString(), publishedBy: actor.user.login };
  }

  /** A scheduled close: start the final board where the definition asks for one (once). */
  private async onRoundClosed(e: {
    benchmarkId: string;
    by: { id: string; login: string };
    reason: string | null;
  }): Promise<void> {
    const b = await this.benchmarks.get(e.benchmarkId);
    if (!b.finalBoard) return;
    try {
      await this.startFinalBoard({ user: e.by }, b.id, `round closed${e.reason ? `: ${e.reason}` : ''}`);
    } catch (err) {
      if (err instanceof AppError) this.logger.log(`final board of ${b.id} at round close: ${err.message}`);
      else throw err;
    }
  }

  private async inOrder(ids: string[]): Promise<RunEntity[]> {
    const runs = await this.repo.runsByIds(ids);
    const byId = new Map(runs.map((r) => [r.id, r]));
    return ids.map((id) => byId.get(id)!).filter(Boolean);
  }

  /** Inserts the batch and `times` re-runs of each source, then wakes dispatch. */
  private async queueBatch(
    actor: Actor,
    b: EffectiveBenchmark,
    req: {
      kind: 'single' | 'bulk' | 'final';
      reason: string;
      replayPrompts: boolean;
      sources: RunEntity[];
      times: number;
      topK?: number;
    },
  ): Promise<{ batch: RerunBatchEntity; runs: RunEntity[] }> {
    const now = this.clock.now();
    const { day } = utcDay(now);
    const rows = (batchId: string): Partial<RunEntity>[] =>
      req.sources.flatMap((src) => {
        // The current rules' spec (a re-run after a rules bump measures under the new rules), with
        // the source's stored nonce only for an audit replay; else the harness draws a fresh one.
        const spec = chooseRun(b, {
          mode: src.mode === 'official' ? 'official' : 'public',
          tier: src.tier ?? undefined,
          dataset: src.dataset ?? undefined,
          confirm: true,
        }).spec;
        if (spec.kind === 'decode') spec.promptNonce = req.replayPrompts ? src.promptNonce : null;
        return Array.from({ length: req.times }, () => ({
          submissionId: src.submissionId,
          benchmarkId: b.id,
          teamId: src.teamId,
          createdBy: actor.user.id,
          mode: src.mode,
          tier: src.tier,
          dataset: src.dataset,
          status: 'queued' as const,
          rulesVersion: b.rulesVersion,
          runTimeLimitSeconds: b.runTimeLimitSeconds,
          spec,
          quotaBucket: RERUN_BUCKET,
          quotaDay: day,
          quotaHolder: src.quotaHolder,
          rerunOf: src.id,
          rerunBatchId: batchId,
        }));
      });
    const queued = await this.repo.insertBatch(
      {
        benchmarkId: b.id,
        kind: req.kind,
        reason: req.reason,
        createdBy: actor.user.id,
        createdByLogin: actor.user.login,
        rulesVersion: b.rulesVersion,
        replayPrompts: req.replayPrompts,
        topK: req.kind === 'final' ? (req.topK ?? null) : null,
        rerunsPerRun: req.kind === 'final' ? req.times : null,
      },
      rows,
      now,
    );
    const views = await this.views.views(queued.runs);
    for (const view of views) {
      this.bus.emit('run.queued', { runId: view.id, benchmarkId: b.id });
      this.bus.emit('run.status', { run: view });
    }
    return queued;
  }

  private async batchViews(b: EffectiveBenchmark, batches: RerunBatchEntity[]): Promise<RerunBatchView[]> {
    const runs = await this.repo.runsOfBatches(batches.map((x) => x.id));
    const sources = await this.repo.runsByIds([...new Set(runs.map((r) => r.rerunOf!))]);
    const sourceById = new Map(sources.map((s) => [s.id, s]));
    const names = await this.repo.holderNames(sources);
    return batches.map((batch) => {
      const mine = runs.filter((r) => r.rerunBatchId === batch.id);
      const count = (s: RunStatus[]) => mine.filter((r) => s.includes(r.status)).length;
      const pairs: RerunPairView[] = mine.map((r) => {
        const src = sourceById.get(r.rerunOf!);
        const n = src ? names.get(src.id) : undefined;
        return {
          sourceRunId: r.rerunOf!,
          rerunId: r.id,
          teamName: (b.ranks === 'users' ? n?.userLogin : n?.teamName) ?? 'unknown',
          teamSlug: n?.teamSlug ?? 'unknown',
          sourceScore: src?.score ?? null,
          sourceInterval: src?.score === null ? null : (src?.scoreInterval ?? null),
          status: r.status,
          score: r.score,
          interval: r.score === null ? null : r.scoreInterval,
        };
      });
      return {
        id: batch.id,
        benchmarkId: batch.benchmarkId,
        kind: batch.kind,
        reason: batch.reason,
        createdBy: batch.createdByLogin,
        createdAt: batch.createdAt.toISOString(),
        rulesVersion: batch.rulesVersion,
        replayPrompts: batch.replayPrompts,
        topK: batch.topK,
        rerunsPerRun: batch.rerunsPerRun,
        counts: {
          queued: count(['queued']),
          running: count(['assigned', 'running']),
          succeeded: count(['succeeded']),
          failed: count(['failed']),
          canceled: count(['canceled']),
        },
        done: mine.every((r) => TERMINAL_STATUSES.includes(r.status)),
        pairs,
      };
    });
  }

  /** The final board's batch, its board as it stands (or as published) and its flags. */
  private async finalBoardOf(b: EffectiveBenchmark, batch: RerunBatchEntity): Promise<FinalBoardAdminView> {
    const [view] = await this.batchViews(b, [batch]);
    const runs = await this.repo.runsOfBatches([batch.id]);
    const sources = await this.inOrder([...new Set(runs.map((r) => r.rerunOf!))]);
    const names = await this.repo.holderNames(sources);
    const verified: VerifiedHolder[] = sources.map((src) => {
      const n = names.get(src.id);
      return {
        key: holderKey(b, src),
        name: (b.ranks === 'users' ? n?.userLogin : n?.teamName) ?? 'unknown',
        teamSlug: b.ranks === 'teams' ? (n?.teamSlug ?? null) : null,
        userLogin: b.ranks === 'users' ? (n?.userLogin ?? null) : null,
        source: {
          runId: src.id,
          score: src.score ?? 0,
          interval: src.scoreInterval,
          finishedAt: src.finishedAt ?? src.createdAt,
        },
        reruns: runs
          .filter((r) => r.rerunOf === src.id)
          .map((r) => ({ status: r.status, score: r.score, interval: r.scoreInterval, pairs: r.pairs })),
      };
    });
    const live = await this.boards.get(b.id);
    const verifiedHolders = new Set(verified.map((v) => (b.ranks === 'users' ? v.userLogin : v.teamSlug)));
    const rest = live.entries
      .filter((e) => !verifiedHolders.has(b.ranks === 'users' ? e.userLogin : e.teamSlug))
      .map(({ rank: _r, overlapsPrevious: _p, overlapsNext: _n, ...e }) => e);
    const { entries, verifications, flags } = buildFinalBoard(verified, rest);
    let board: LeaderboardView = {
      benchmarkId: b.id,
      rulesVersion: b.rulesVersion,
      ranks: b.ranks,
      entries,
      updatedAt: this.clock.now().toISOString(),
      board: 'final',
      finalPublishedAt: batch.publishedAt?.toISOString() ?? null,
      verifications,
    };
    // Once published, the board is the one published (frozen), not recomputed.
    if (batch.publishedAt) board = await this.boards.finalBoard(b.id).catch(() => board);
    return {
      batch: view,
      board,
      flags,
      publishedAt: batch.publishedAt?.toISOString() ?? null,
      publishedBy: batch.publishedByLogin,
    };
  }
}
