import { Injectable, OnModuleInit } from '@nestjs/common';
import { createHash } from 'node:crypto';
import type {
  CancelRunBody,
  CreateRunBody,
  CreateRunResponse,
  LogsPage,
  QuotaView,
  RunResultView,
  RunView,
} from '@dryft/libs';
import { DEFAULT_LOG_LIMITS, TERMINAL_STATUSES } from '@dryft/libs';
import type { LogLimits, LogLine } from '@dryft/libs';
import type { EntityManager } from 'typeorm';
import type { z } from 'zod';
import { BanPolicy } from '../bans/ban-policy';
import { BenchmarksService, EffectiveBenchmark } from '../benchmarks/benchmarks.service';
import { Clock } from '../common/clock';
import { decodeCursor, encodeCursor } from '../common/cursor';
import {
  AppError,
  badRequest,
  conflict,
  forbidden,
  notFound,
  tooMany,
  unprocessable,
} from '../common/errors';
import { EventBus } from '../common/event-bus';
import type { Principal } from '../common/principal';
import { SubmissionsService } from '../submissions/submissions.service';
import { TeamsService } from '../teams/teams.service';
import { UsersService } from '../users/users.service';
import { IdempotencyRepository } from './idempotency.repository';
import { chooseRun, utcDay } from './run-options';
import { checkView, metricView, runView, sampleView } from './run-views';
import { RunEntity } from './run.entity';
import { RunQueue } from './run-queue';
import { RunsRepository } from './runs.repository';
import { endOfLog } from './log-cap';
import { BenchmarkRegistry } from '../benchmarks/benchmark-registry';
import { WaitingService } from './waiting.service';

const IDEMPOTENCY_TTL_MS = 24 * 3600_000;
/** An in-flight key older than this never committed (its request died): a retry may take it over. */
const IDEMPOTENCY_STALE_MS = 60_000;

/** Who a run is started by: the signed-in caller, or the member a repository acts for. */
export interface RunActor {
  id: string;
  login: string;
}

export interface CreateRunRequest {
  submissionId: string;
  body: CreateRunBody;
  idempotencyKey?: string;
}

@Injectable()
export class RunsService implements OnModuleInit {
  constructor(
    private readonly runs: RunsRepository,
    private readonly queue: RunQueue,
    private readonly idempotency: IdempotencyRepository,
    private readonly submissions: SubmissionsService,
    private readonly benchmarks: BenchmarksService,
    private readonly teams: TeamsService,
    private readonly users: UsersService,
    private readonly clock: Clock,
    private readonly bus: EventBus,
    private readonly bans: BanPolicy,
    private readonly registry: BenchmarkRegistry,
    private readonly waiting: WaitingService,
  ) {}

  /** The log cap of a benchmark's runs (its definition's `logs`, or the defaults). */
  logLimits(benchmarkId: string): LogLimits {
    return this.registry.get(benchmarkId)?.logs ?? DEFAULT_LOG_LIMITS;
  }

  /** Stores the end of a capped log (notice and kept tail) inside the caller's transaction; returns it to emit. */
  async storeEndOfLog(tx: RunsRepository, run: RunEntity): Promise<LogLine[]> {
    if (!run.logTail) return [];
    const after = run.lastLogSeq;
    const lines = endOfLog(run, this.logLimits(run.benchmarkId), this.clock.now().getTime());
    await tx.insertLogs(run.id, lines, after);
    await this.queue.within(tx).clearLogTail(run);
    return lines;
  }

  /** Before a run ends without its agent's verdict (lost, revoked, canceled): the end of its log is stored. */
  async flushLogTail(runId: string): Promise<void> {
    const lines = await this.runs.transaction(async (tx) => {
      const run = await tx.lock(runId);
      return run ? this.storeEndOfLog(tx, run) : [];
    });
    if (lines.length) this.bus.emit('run.logs', { runId, lines });
  }

  onModuleInit(): void {
    this.bus.on('benchmark.settings_changed', ({ benchmarkId, runTimeLimitSeconds }) =>
      this.applyRunTimeLimit(benchmarkId, runTimeLimitSeconds),
    );
    this.bus.on('benchmark.rules_changed', async ({ benchmarkId, rulesVersion, reason }) => {
      await this.queue.invalidateBefore(
        benchmarkId,
        rulesVersion,
        `Rules changed to version ${rulesVersion}: ${reason}`,
      );
      this.bus.emit('leaderboard.changed', { benchmarkId });
    });
    this.bus.on('ban.created', async ({ userId, teamId, benchmarkId, reason }) => {
      const runs = await this.runs.unstartedOf({ userId, teamId, benchmarkId });
      const who = userId ? 'its author was' : 'the team was';
      for (const run of runs)
        await this.cancelRun(
          run.id,
          `Canceled before it started: ${who} banned by an organizer (${reason}).`,
          `banned: ${reason}`,
        );
    });
  }

  /**
   * Starts a run. With an Idempotency-Key, the same key and body answer with the first response and
   * start nothing new; another body is 422; a request still in flight with that key is 409.
   */
  async create(
    principal: Principal,
    req: CreateRunRequest,
  ): Promise<{ status: number; body: CreateRunResponse; replayed: boolean }> {
    const submission = await this.submissions.getAuthorized(principal, req.submissionId, 'run');
    return this.createIdempotent({ id: principal.user.id, login: principal.user.login }, submission, req);
  }

  /**
   * Starts a run on behalf of a connected repository (a push or "Run now"), where the caller has
   * already decided who acts (`actor`) and checked the team's permission. Same rules, daily limits
   * and idempotency semantics as `create`; the key is derived from the webhook delivery so a
   * redelivery never starts a second run.
   */
  async createForRepository(
    actor: RunActor,
    req: CreateRunRequest & { idempotencyKey: string },
  ): Promise<{ status: number; body: CreateRunResponse; replayed: boolean }> {
    const submission = await this.submissions.findById(req.submissionId);
    if (!submission) throw notFound('submission_not_found', `No submission ${req.submissionId}.`);
    return this.createIdempotent(actor, submission, req);
  }

  private async createIdempotent(
    actor: RunActor,
    submission: { id: string; teamId: string },
    req: CreateRunRequest,
  ): Promise<{ status: number; body: CreateRunResponse; replayed: boolean }> {
    const key = req.idempotencyKey;
    if (key === undefined)
      return { status: 201, body: await this.createRun(actor, submission.id, req.body), replayed: false };
    if (!/^[\x21-\x7e]{1,200}$/.test(key)) {
      throw badRequest(
        'invalid_idempotency_key',
        'Idempotency-Key must be 1–200 visible ASCII characters (a UUID is ideal).',
      );
    }
    const teamId = submission.teamId;
    const hash = createHash('sha256')
      .update(JSON.stringify({ s: submission.id, b: canonical(req.body) }))
      .digest('hex');
    const now = this.clock.now().getTime();
    let claimed = await this.idempotency.claim(teamId, key, hash);
    if (!claimed) {
      const existing = await this.idempotency.find(teamId, key);
      const expired = existing && existing.createdAt.getTime() < now - IDEMPOTENCY_TTL_MS;
      if (existing && !expired && existing.requestHash !== hash) {
        throw unprocessable(
          'idempotency_key_reused',
          'This Idempotency-Key was already used for a different request; use a new key for each intended run.',
        );
      }
      if (existing && !expired && existing.state === 'done') {
        return {
          status: existing.responseStatus ?? 201,
          body: existing.responseBody as CreateRunResponse,
          replayed: true,
        };
      }
      claimed = await this.idempotency.takeOver(
        teamId,
        key,
        hash,
        new Date(now - IDEMPOTENCY_STALE_MS),
        new Date(now - IDEMPOTENCY_TTL_MS),
      );
      if (!claimed)
        throw conflict(
          'idempotency_in_flight',
          'A request with this Idempotency-Key is still being processed; retry in a moment with the same key.',
        );
    }
    try {
      const body = await this.createRun(actor, submission.id, req.body, (manager, response) =>
        this.idempotency.complete(manager, teamId, key, 201, response),
      );
      return { status: 201, body, replayed: false };
    } catch (err) {
      // A refused request leaves no trace: the same key may be retried once the cause is fixed.
      await this.idempotency.release(teamId, key);
      throw err;
    }
  }

  private async createRun(
    actor: RunActor,
    submissionId: string,
    body: CreateRunBody,
    inTransaction?: (manager: EntityManager, response: CreateRunResponse) => Promise<void>,
  ): Promise<CreateRunResponse> {
    const submission = (await this.submissions.findById(submissionId))!;
    const benchmark = await this.benchmarks.get(submission.benchmarkId);
    await this.bans.assertCanAct(
      { userId: actor.id, teamId: submission.teamId, benchmarkId: benchmark.id },
      'start runs',
    );
    if (!benchmark.evaluationsOpen) {
      throw forbidden(
        'evaluations_closed',
        `Evaluations for ${benchmark.title} are closed by the organizer; your submission is kept, start the run when they reopen.`,
      );
    }
    const choice = chooseRun(benchmark, body);
    const now = this.clock.now();
    const { day, resetsAt } = utcDay(now);
    const holder = benchmark.ranks === 'users' ? actor.id : submission.teamId;
    const submissionName = `${submission.sourceName} #${submission.number}`;
    const result = await this.runs.transaction(async (tx) => {
      await tx.lockQuota(holder, choice.quotaBucket, day);
      const used = await tx.countQuota(benchmark.id, holder, choice.quotaBucket, day);
      if (choice.dailyLimit !== null && used >= choice.dailyLimit) {
        const who = benchmark.ranks === 'users' ? 'You have' : 'Your team has';
        throw tooMany(
          'daily_limit_reached',
          `${who} used all ${choice.dailyLimit} ${choice.quotaBucket} runs for today (UTC); the limit resets at ${resetsAt.toISOString()}.`,
          {
            bucket: choice.quotaBucket,
            limit: choice.dailyLimit,
            used,
            resetsAt: resetsAt.toISOString(),
          },
        );
      }
      const run = await tx.insert({
        submissionId: submission.id,
        benchmarkId: benchmark.id,
        teamId: submission.teamId,
        createdBy: actor.id,
        mode: choice.mode,
        tier: choice.tier,
        dataset: choice.dataset,
        status: 'queued',
        rulesVersion: benchmark.rulesVersion,
        runTimeLimitSeconds: benchmark.runTimeLimitSeconds,
        spec: choice.spec,
        quotaBucket: choice.quotaBucket,
        quotaDay: day,
        quotaHolder: holder,
      });
      const quota: QuotaView = {
        bucket: choice.quotaBucket,
        limit: choice.dailyLimit,
        used: used + 1,
        remaining: choice.dailyLimit === null ? null : choice.dailyLimit - used - 1,
        refunded: await tx.countRefunded(benchmark.id, holder, choice.quotaBucket, day),
        resetsAt: resetsAt.toISOString(),
      };
      const position = await tx.queuePosition(run);
      const response: CreateRunResponse = {
        run: runView(run, { submissionName, createdBy: actor.login, queuePosition: position }),
        quota,
      };
      if (inTransaction) await inTransaction(tx.currentManager(), response);
      return { run, response };
    });
    const position = result.response.run.queuePosition;
    if (position !== null)
      result.response.run.waiting = await this.waiting.forRun(result.run, position).catch(() => null);
    this.bus.emit('run.queued', { runId: result.run.id, benchmarkId: benchmark.id });
    this.bus.emit('run.status', { run: result.response.run });
    return result.response;
  }

  /** The gate for a run: someone outside its team gets 404, as if it did not exist. */
  async getAuthorized(
    principal: Principal,
    runId: string,
    action: 'read' | 'cancel' = 'read',
  ): Promise<RunEntity> {
    const run = await this.runs.findById(runId);
    const missing = () =>
      notFound('run_not_found', `No run ${runId} in your team. Copy the Run ID beside the run's heading.`);
    if (!run) throw missing();
    // Organizers signed in to the web read every run (the console's run page, logs included).
    if (action === 'read' && principal.isAdmin && principal.via === 'session') return run;
    // A baseline re-measure belongs to no team: organizers read and cancel it, nobody else sees it.
    if (!run.teamId) {
      if (principal.isAdmin) return run;
      throw missing();
    }
    try {
      await this.teams.authorize(principal, run.teamId, action);
    } catch (err) {
      if (err instanceof AppError && err.status === 404) throw missing();
      throw err;
    }
    return run;
  }

  async get(principal: Principal, runId: string): Promise<RunView> {
    return this.view(await this.getAuthorized(principal, runId));
  }

  /** For the live layer: the view of a run by id, no authorization (callers check membership). */
  async viewById(runId: string): Promise<RunView | null> {
    const run = await this.runs.findById(runId);
    return run ? this.view(run) : null;
  }

  async view(run: RunEntity): Promise<RunView> {
    const [submission, creator, position] = await Promise.all([
      run.submissionId ? this.submissions.findById(run.submissionId) : null,
      this.users.findById(run.createdBy),
      this.runs.queuePosition(run),
    ]);
    return runView(run, {
      submissionName: submission
        ? `${submission.sourceName} #${submission.number}`
        : run.mode === 'baseline'
          ? `baseline re-measure (${run.hardware})`
          : 'unknown',
      createdBy: creator?.login ?? 'unknown',
      queuePosition: position,
      waiting: position !== null ? await this.waiting.forRun(run, position) : null,
    });
  }

  async list(
    principal: Principal,
    opts: { benchmarkId?: string; status?: string; submissionId?: string; cursor?: string; limit: number },
  ) {
    const teamId = this.teams.requireActiveTeam(principal);
    await this.teams.authorize(principal, teamId, 'read');
    const rows = await this.runs.listForTeam(teamId, {
      ...opts,
      before: decodeCursor(opts.cursor),
      limit: opts.limit + 1,
    });
    const page = rows.slice(0, opts.limit);
    const last = page[page.length - 1];
    return {
      items: await Promise.all(page.map((r) => this.view(r))),
      nextCursor: rows.length > opts.limit && last ? encodeCursor(last.createdAt, last.id) : null,
    };
  }

  /** Any member may cancel; cancelling twice, or a finished run, changes nothing and says so. */
  async cancel(principal: Principal, runId: string, body: z.infer<typeof CancelRunBody>) {
    const run = await this.getAuthorized(principal, runId, 'cancel');
    if (TERMINAL_STATUSES.includes(run.status)) {
      const what = run.status === 'canceled' ? 'was already canceled' : `already ${run.status}`;
      return { run: await this.view(run), changed: false, message: `Run ${what}; nothing to cancel.` };
    }
    return this.cancelRun(run.id, `Canceled by ${principal.user.login}: ${body.reason}`, body.reason);
  }

  /**
   * Used by member cancels and by the server's whole-run limit. A run canceled before it started
   * (queued or assigned) is refunded: it does not count against the daily limit.
   */
  async cancelRun(runId: string, message: string, reason: string) {
    await this.flushLogTail(runId);
    const changed = await this.queue.cancel(runId, { reason, message, at: this.clock.now() });
    const current = changed ?? (await this.runs.findById(runId))!;
    const view = await this.view(current);
    if (changed) {
      this.bus.emit('run.status', { run: view });
      this.bus.emit('run.cancel_requested', { runId, agentId: current.agentId, reason });
      this.bus.emit('run.finished', { runId, agentId: current.agentId, slot: current.slot });
    }
    return {
      run: view,
      changed: Boolean(changed),
      message: changed ? 'Run canceled.' : `Run already ${current.status}; nothing to cancel.`,
    };
  }

  async logs(principal: Principal, runId: string, after: number, limit: number): Promise<LogsPage> {
    const run = await this.getAuthorized(principal, runId);
    return this.logsOf(run, after, limit);
  }

  async logsOf(run: RunEntity, after: number, limit: number): Promise<LogsPage> {
    const items = await this.runs.getLogs(run.id, after, limit);
    const nextAfter = items.length ? items[items.length - 1].seq : after;
    const finished = TERMINAL_STATUSES.includes(run.status);
    return { items, nextAfter, complete: finished && nextAfter >= run.lastLogSeq };
  }

  async result(principal: Principal, runId: string): Promise<RunResultView> {
    return this.resultOf(await this.getAuthorized(principal, runId));
  }

  async resultOf(run: RunEntity): Promise<RunResultView> {
    const [view, samples, checks, metrics] = await Promise.all([
      this.view(run),
      this.runs.samples(run.id),
      this.runs.checks(run.id),
      this.runs.metrics(run.id),
    ]);
    const lastMetrics: Record<string, number> = { ...(run.metrics ?? {}) };
    if (!run.metrics) for (const m of metrics) lastMetrics[m.name] = m.value;
    return {
      run: view,
      score: run.score,
      interval: run.score === null ? null : run.scoreInterval,
      pairs: run.pairs,
      indicative: run.mode === 'public' && run.spec.kind === 'decode',
      workloads: run.workloads ?? [],
      samples: samples.map(sampleView),
      checks: checks.map(checkView),
      metrics: lastMetrics,
      detail: run.detail,
      complete: TERMINAL_STATUSES.includes(run.status),
      ...(metrics.length ? { curve: metrics.map(metricView) } : {}),
    };
  }

  /** Today's daily-limit standing for the caller, per bucket of a benchmark. */
  async quota(principal: Principal, benchmarkId: string | undefined): Promise<QuotaView[]> {
    if (!benchmarkId) throw badRequest('benchmark_required', 'Pass ?benchmark=<id>.');
    const teamId = this.teams.requireActiveTeam(principal);
    await this.teams.authorize(principal, teamId, 'read');
    const b = await this.benchmarks.get(benchmarkId);
    const holder = b.ranks === 'users' ? principal.user.id : teamId;
    const { day, resetsAt } = utcDay(this.clock.now());
    const buckets = quotaBuckets(b);
    return Promise.all(
      buckets.map(async ({ bucket, limit }) => {
        const [used, refunded] = await Promise.all([
          this.runs.countQuota(b.id, holder, bucket, day),
          this.runs.countRefunded(b.id, holder, bucket, day),
        ]);
        return {
          bucket,
          limit,
          used,
          remaining: limit === null ? null : Math.max(0, limit - used),
          refunded,
          resetsAt: resetsAt.toISOString(),
        };
      }),
    );
  }

  /** Organizers: forget cached baselines so the next run measures the baseline again. */
  forgetBaselines(benchmarkId: string, hardware?: string): Promise<number> {
    return this.runs.deleteBaselines(benchmarkId, hardware);
  }

  /** A changed whole-run limit applies to runs already in progress. */
  private async applyRunTimeLimit(benchmarkId: string, seconds: number): Promise<void> {
    const changed = await this.queue.setLimitForUnfinished(benchmarkId, seconds);
    for (const run of changed) {
      if (run.deadlineAt)
        this.bus.emit('run.deadline_changed', {
          runId: run.id,
          agentId: run.agentId,
          deadlineAt: run.deadlineAt.getTime(),
        });
      this.bus.emit('run.status', { run: await this.view(run) });
    }
  }
}

function quotaBuckets(b: EffectiveBenchmark): { bucket: string; limit: number | null }[] {
  if (b.kind === 'training') return b.tiers.map((t) => ({ bucket: t.id, limit: t.dailyLimit }));
  return (['public', 'official'] as const).map((m) => ({ bucket: m, limit: b.dailyLimits[m] ?? null }));
}

/** Key order does not change a request's identity. */
function canonical(body: CreateRunBody): Record<string, unknown> {
  return Object.fromEntries(
    Object.entries(body)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => a.localeCompare(b)),
  );
}
