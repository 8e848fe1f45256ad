import { Inject, Injectable } from '@nestjs/common';
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
import { TERMINAL_STATUSES } from '@dryft/libs';
import type { EntityManager } from 'typeorm';
import type { z } from 'zod';
import { BanPolicy } from '../bans/ban-policy';
import { BenchmarksService } from '../benchmarks/benchmarks.service';
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
import { CONFIG, Config } from '../config/config';
import type { Principal } from '../common/principal';
import { SubmissionsService } from '../submissions/submissions.service';
import { TeamsService } from '../teams/teams.service';
import { IdempotencyRepository } from './idempotency.repository';
import { QuotaGrantsService } from '../quota-grants/quota-grants.service';
import { RunLifecycleService } from './run-lifecycle.service';
import { RunLog } from './run-log';
import { chooseRun, quotaBuckets, utcDay } from './run-options';
import { runView, RunViews } from './run-views';
import { RunEntity } from './run.entity';
import { RunsRepository } from './runs.repository';
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

/**
 * The REST side of runs: starting one (daily limits, the team's queue, idempotency), who may read
 * or cancel it, lists, logs, results and quotas. Views are RunViews', logs RunLog's, and every end
 * of a run (a cancel too) RunLifecycleService's.
 */
@Injectable()
export class RunsService {
  constructor(
    private readonly runs: RunsRepository,
    private readonly views: RunViews,
    private readonly log: RunLog,
    private readonly lifecycle: RunLifecycleService,
    private readonly idempotency: IdempotencyRepository,
    private readonly submissions: SubmissionsService,
    private readonly benchmarks: BenchmarksService,
    private readonly teams: TeamsService,
    private readonly clock: Clock,
    private readonly bus: EventBus,
    private readonly bans: BanPolicy,
    private readonly waiting: WaitingService,
    private readonly grants: QuotaGrantsService,
    @Inject(CONFIG) private readonly config: Config,
  ) {}

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
    let choice = chooseRun(benchmark, body);
    // Public decode runs of a benchmark whose definition sets no daily limit: the hub's own cap.
    const hubCap = benchmark.kind === 'decode' && choice.mode === 'public' && choice.dailyLimit === null;
    if (hubCap) choice = { ...choice, dailyLimit: this.config.TEAM_PUBLIC_RUNS_PER_DAY };
    const now = this.clock.now();
    const { day, resetsAt } = utcDay(now);
    const holder = benchmark.ranks === 'users' ? actor.id : submission.teamId;
    // An organizer's grant adds to the day's limit (grants only ever add, so reading it before the
    // quota lock cannot let a run past a limit)
    let granted = 0;
    if (choice.dailyLimit !== null) {
      granted = await this.grants.extraRuns(benchmark.id, holder, choice.quotaBucket, day);
      if (granted) choice = { ...choice, dailyLimit: choice.dailyLimit + granted };
    }
    const grantedText = granted ? ` (${granted} of them granted by an organizer)` : '';
    const submissionName = `${submission.sourceName} #${submission.number}`;
    const result = await this.runs.transaction(async (tx) => {
      await tx.lockTeamQueue(submission.teamId);
      await tx.lockQuota(holder, choice.quotaBucket, day);
      const used = await tx.countQuota(benchmark.id, holder, choice.quotaBucket, day);
      if (choice.dailyLimit !== null && used >= choice.dailyLimit) {
        const who = benchmark.ranks === 'users' ? 'You have' : 'Your team has';
        throw tooMany(
          hubCap ? 'public_run_quota' : 'daily_limit_reached',
          hubCap
            ? `${who} used all ${choice.dailyLimit} public runs of ${benchmark.id} for today (UTC)${grantedText}, this hub's limit per team; it resets at ${resetsAt.toISOString()}.`
            : `${who} used all ${choice.dailyLimit} ${choice.quotaBucket} runs for today (UTC)${grantedText}; the limit resets at ${resetsAt.toISOString()}.`,
          {
            bucket: choice.quotaBucket,
            limit: choice.dailyLimit,
            used,
            resetsAt: resetsAt.toISOString(),
          },
        );
      }
      const queued = await tx.countQueued(submission.teamId);
      if (queued >= this.config.TEAM_QUEUED_RUNS) {
        throw conflict(
          'queued_runs_limit',
          `Your team has ${queued} runs waiting in the queue, this hub's limit of ${this.config.TEAM_QUEUED_RUNS} per team. Start this one when one of them has been taken by an agent or canceled; nothing was queued or counted.`,
          { used: queued, limit: this.config.TEAM_QUEUED_RUNS, resetsAt: null },
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
        granted,
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
    return this.views.view(await this.getAuthorized(principal, runId));
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
      items: await this.views.views(page),
      nextCursor: rows.length > opts.limit && last ? encodeCursor(last.createdAt, last.id) : null,
    };
  }

  /** Any member may cancel; cancelling twice, or a finished run, changes nothing and says so. */
  async cancel(principal: Principal, runId: string, body: z.infer<typeof CancelRunBody>) {
    const run = await this.getAuthorized(principal, runId, 'cancel');
    if (TERMINAL_STATUSES.includes(run.status)) {
      const what = run.status === 'canceled' ? 'was already canceled' : `already ${run.status}`;
      return { run: await this.views.view(run), changed: false, message: `Run ${what}; nothing to cancel.` };
    }
    return this.lifecycle.cancelRun(
      run.id,
      `Canceled by ${principal.user.login}: ${body.reason}`,
      body.reason,
    );
  }

  async logs(principal: Principal, runId: string, after: number, limit: number): Promise<LogsPage> {
    const run = await this.getAuthorized(principal, runId);
    return this.log.page(run, after, limit);
  }

  async result(principal: Principal, runId: string): Promise<RunResultView> {
    return this.views.resultOf(await this.getAuthorized(principal, runId));
  }

  /** Today's daily-limit standing for the caller, per bucket of a benchmark. */
  async quota(principal: Principal, benchmarkId: string | undefined): Promise<QuotaView[]> {
    if (!benchmarkId) throw badRequest('benchmark_required', 'Pass ?benchmark=<id>.');
    const teamId = this.teams.requireActiveTeam(principal);
    await this.teams.authorize(principal, teamId, 'read');
    const b = await this.benchmarks.get(benchmarkId);
    const holder = b.ranks === 'users' ? principal.user.id : teamId;
    const { day, resetsAt } = utcDay(this.clock.now());
    const buckets = quotaBuckets(b, this.config.TEAM_PUBLIC_RUNS_PER_DAY);
    return Promise.all(
      buckets.map(async ({ bucket, limit }) => {
        const [used, refunded, granted] = await Promise.all([
          this.runs.countQuota(b.id, holder, bucket, day),
          this.runs.countRefunded(b.id, holder, bucket, day),
          limit === null ? 0 : this.grants.extraRuns(b.id, holder, bucket, day),
        ]);
        const total = limit === null ? null : limit + granted;
        return {
          bucket,
          limit: total,
          used,
          remaining: total === null ? null : Math.max(0, total - used),
          refunded,
          granted,
          resetsAt: resetsAt.toISOString(),
        };
      }),
    );
  }
}

/** Key order does not change a request's identity. */
function canonical(body: CreateRunBody): Record<string, unknown> {
  return Object.fromEntries(
    Object.entries(body)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => a.localeCompare(b)),
  );
}
