import { Injectable } from '@nestjs/common';
import type { FailureCode, RunKindMode, ScoreInterval, ScoringBasis, WorkloadSummary } from '@dryft/libs';
import { DataSource, In } from 'typeorm';
import { returned } from '../database/returned-rows';
import { TransactionalRepository } from '../common/transactional-repository';
import { RunEntity } from './run.entity';

export interface ClaimRequest {
  agentId: string;
  agentName: string;
  slot: number;
  /** Benchmarks this agent may run (hardware and capabilities already matched). */
  benchmarkIds: string[];
  allowOfficial: boolean;
  allowPublic: boolean;
  /** The agent's hardware key (`baselineKey`): a baseline re-measure goes only to its own key. */
  hardware: string;
  downloadTokenHash: string;
  now: Date;
  leaseUntil: Date;
  /**
   * Claim this run only (when it is queued and eligible), like Buildkite's `--acquire-job`: the test
   * agent takes a named run through the same statement dispatch uses.
   */
  only?: string;
}

export interface ActiveRunRow {
  id: string;
  agentId: string | null;
  slot: number | null;
  mode: RunKindMode;
  status: string;
  lastBatchSeq: number;
  /** The whole-run deadline (null before assignment). */
  deadlineAt: Date | null;
}

/** The agent's verdict as stored on the run (the lifecycle decides it; {@link RunQueue.finish} writes it). */
export interface RunVerdict {
  status: 'succeeded' | 'failed' | 'canceled';
  finishedAt: Date;
  workloads: WorkloadSummary[] | null;
  metrics: Record<string, number> | null;
  detail: string | null;
  message: string | null;
  /** Why a run ended canceled (the whole-run limit an agent stopped it at); else as it was. */
  cancelReason: string | null;
  pairs: number | null;
  score: number | null;
  scoreInterval: ScoreInterval | null;
  /** Official decode runs through a calibrated K: the absolute interval (K's folded in). */
  absoluteInterval: ScoreInterval | null;
  scoring: ScoringBasis | null;
  /** Official decode runs: the hidden prompts' nonce (organizers only). */
  promptNonce: string | null;
  failureCode: FailureCode | null;
  quotaRefunded: boolean;
}

type ActiveRow = {
  id: string;
  agent_id: string | null;
  slot: number | null;
  mode: RunKindMode;
  status: string;
  last_batch_seq: number;
  deadline_at: Date | null;
};
const activeRow = (r: ActiveRow): ActiveRunRow => ({
  id: r.id,
  agentId: r.agent_id,
  slot: r.slot,
  mode: r.mode,
  status: r.status,
  lastBatchSeq: r.last_batch_seq,
  deadlineAt: r.deadline_at ? new Date(r.deadline_at) : null,
});

/**
 * Every change of a run's state, and the queries of dispatch, leases and the sweeper, in one place.
 * States: queued → assigned → running → succeeded | failed | canceled (assigned → queued when an
 * agent hands a never-started run back; failed → assigned | running when the agent whose lease
 * lapsed still holds the run). Each transition is one conditional UPDATE: only rows in the states it
 * starts from change, so two replicas (or a sweeper and an agent) never apply one outcome twice.
 * The rules of when to apply which live in RunLifecycleService; this class only writes them. The
 * log's own statements (chunks, the one-statement head batch, the tail) are RunLogRepository's.
 */
@Injectable()
export class RunQueue extends TransactionalRepository {
  constructor(dataSource: DataSource) {
    super(dataSource);
  }

  // --- dispatch ---------------------------------------------------------------------------------

  /**
   * queued → assigned: claims the next eligible queued run for one slot, in one statement.
   * `FOR UPDATE SKIP LOCKED` is the arbiter between dispatchers (replicas, concurrent triggers): a
   * row another transaction is claiming is skipped, never claimed twice. Fairness: the team with the
   * fewest runs in progress goes first, then the team served least recently (so a burst from one
   * team alternates with everyone else's runs instead of starving them on a one-slot agent), then
   * the oldest run. A baseline re-measure or calibration run (mode `baseline` / `calibration`) takes
   * a slot only where an official run could (it never shares a GPU), only on an agent of its
   * hardware key, and before team runs (a calibration's parts may go to different agents). An
   * organizer's re-run (`rerun_of` set) goes after every queued team run: verifying never delays a
   * team's own runs. The
   * deadline counts from assignment, with the limit in force.
   */
  async markAssigned(req: ClaimRequest): Promise<RunEntity | null> {
    if (req.benchmarkIds.length === 0 || (!req.allowOfficial && !req.allowPublic)) return null;
    const modes = [
      ...(req.allowPublic ? ['public'] : []),
      ...(req.allowOfficial ? ['official', 'baseline', 'calibration'] : []),
    ];
    const raw: unknown = await this.manager.query(
      `WITH candidate AS (
         SELECT r.id FROM runs r
          WHERE r.status = 'queued' AND r.benchmark_id = ANY($1) AND r.mode = ANY($2)
            AND (r.hardware IS NULL OR r.hardware = $9)${req.only ? ' AND r.id = $10' : ''}
          ORDER BY r.mode IN ('baseline', 'calibration') DESC,
                   r.rerun_of IS NOT NULL,
                   (SELECT count(*) FROM runs a WHERE a.team_id = r.team_id AND a.status IN ('assigned', 'running')),
                   (SELECT max(s.assigned_at) FROM runs s WHERE s.team_id = r.team_id) ASC NULLS FIRST,
                   r.created_at, r.id
          LIMIT 1
          FOR UPDATE SKIP LOCKED
       )
       UPDATE runs SET status = 'assigned', agent_id = $3, agent_name = $4, slot = $5, assigned_at = $6,
              lease_expires_at = $7, deadline_at = $6::timestamptz + make_interval(secs => runs.run_time_limit_seconds),
              download_token_hash = $8
         FROM candidate WHERE runs.id = candidate.id AND runs.status = 'queued'
       RETURNING runs.id`,
      [
        req.benchmarkIds,
        modes,
        req.agentId,
        req.agentName,
        req.slot,
        req.now,
        req.leaseUntil,
        req.downloadTokenHash,
        req.hardware,
        ...(req.only ? [req.only] : []),
      ],
    );
    const rows = returned<{ id: string }>(raw);
    if (rows.length === 0) return null;
    return this.manager.findOneBy(RunEntity, { id: rows[0].id });
  }

  /**
   * The runtime of the agent a run was just assigned to, and how it differs from the benchmark's
   * pins; only while that agent holds it, unstarted.
   */
  async recordRuntime(
    run: RunEntity,
    runtime: Record<string, string> | null,
    mismatch: string[] | null,
  ): Promise<void> {
    await this.manager.query(
      `UPDATE runs SET runtime = $3::jsonb, runtime_mismatch = $4::jsonb
        WHERE id = $1 AND agent_id = $2 AND status = 'assigned'`,
      [
        run.id,
        run.agentId,
        runtime === null ? null : JSON.stringify(runtime),
        mismatch === null ? null : JSON.stringify(mismatch),
      ],
    );
    run.runtime = runtime;
    run.runtimeMismatch = mismatch;
  }

  /** assigned → queued: an assigned, never-started run goes back (refused or handed back by its agent). */
  async requeue(runId: string, agentId: string): Promise<boolean> {
    const raw: unknown = await this.manager.query(
      `UPDATE runs SET status = 'queued', agent_id = NULL, agent_name = NULL, slot = NULL, assigned_at = NULL,
              lease_expires_at = NULL, deadline_at = NULL, download_token_hash = NULL,
              runtime = NULL, runtime_mismatch = NULL
        WHERE id = $1 AND agent_id = $2 AND status = 'assigned' AND last_batch_seq = 0 AND started_at IS NULL
       RETURNING id`,
      [runId, agentId],
    );
    return returned<{ id: string }>(raw).length > 0;
  }

  /** Benchmarks with a queued run (cheap check before a dispatch pass). */
  async queuedBenchmarks(): Promise<string[]> {
    const rows: { benchmark_id: string }[] = await this.manager.query(
      `SELECT DISTINCT benchmark_id FROM runs WHERE status = 'queued'`,
    );
    return rows.map((r) => r.benchmark_id);
  }

  /** Runs each agent holds now (assigned or running), for views and slot accounting. */
  async activeRunsByAgent(agentIds?: string[]): Promise<ActiveRunRow[]> {
    const rows: ActiveRow[] = await this.manager.query(
      `SELECT id, agent_id, slot, mode, status, last_batch_seq, deadline_at FROM runs
          WHERE status IN ('assigned', 'running') AND agent_id IS NOT NULL ${agentIds ? 'AND agent_id = ANY($1)' : ''}
          ORDER BY assigned_at`,
      agentIds ? [agentIds] : [],
    );
    return rows.map(activeRow);
  }

  async runsByIds(ids: string[]): Promise<ActiveRunRow[]> {
    if (ids.length === 0) return [];
    const rows: ActiveRow[] = await this.manager.query(
      `SELECT id, agent_id, slot, mode, status, last_batch_seq, deadline_at FROM runs WHERE id = ANY($1)`,
      [ids],
    );
    return rows.map(activeRow);
  }

  /** Consumes a one-time download token: the first request for it wins, any later one finds nothing. */
  async consumeDownloadToken(hash: string, agentId: string): Promise<RunEntity | null> {
    const raw: unknown = await this.manager.query(
      `UPDATE runs SET download_token_hash = NULL
        WHERE download_token_hash = $1 AND agent_id = $2 AND status IN ('assigned', 'running')
       RETURNING id`,
      [hash, agentId],
    );
    const rows = returned<{ id: string }>(raw);
    return rows.length ? this.manager.findOneByOrFail(RunEntity, { id: rows[0].id }) : null;
  }

  // --- what the agent reports -------------------------------------------------------------------

  /** assigned → running (the agent said it started); null when the run was not assigned. */
  async markRunning(runId: string, at: Date): Promise<RunEntity | null> {
    const raw: unknown = await this.manager.query(
      `UPDATE runs SET status = 'running', started_at = $2 WHERE id = $1 AND status = 'assigned' RETURNING id`,
      [runId, at],
    );
    return returned<{ id: string }>(raw).length ? this.manager.findOneBy(RunEntity, { id: runId }) : null;
  }

  /** The agent still holds these runs: their leases end no sooner than `until`. */
  async renewLeases(agentId: string, runIds: string[], until: Date): Promise<void> {
    if (runIds.length === 0) return;
    await this.manager.query(
      `UPDATE runs SET lease_expires_at = $3 WHERE agent_id = $1 AND id = ANY($2) AND status IN ('assigned', 'running')`,
      [agentId, runIds, until],
    );
  }

  /**
   * A batch was stored (inside its transaction, the run row locked): its seq, the log counters and
   * pending tail, and assigned → running when it is the run's first sign of life.
   */
  async recordBatch(run: RunEntity): Promise<void> {
    await this.manager.query(
      'UPDATE runs SET last_batch_seq = $2, last_log_seq = $3, status = $4, started_at = $5, log_lines = $6, log_bytes = $7, log_tail = $8 WHERE id = $1',
      [
        run.id,
        run.lastBatchSeq,
        run.lastLogSeq,
        run.status,
        run.startedAt,
        run.logLines,
        run.logBytes,
        run.logTail === null ? null : JSON.stringify(run.logTail),
      ],
    );
  }

  /** assigned | running → the verdict (inside the verdict's transaction, the run row locked). */
  async finish(runId: string, v: RunVerdict): Promise<void> {
    await this.manager.update(
      RunEntity,
      { id: runId },
      {
        status: v.status,
        finishedAt: v.finishedAt,
        leaseExpiresAt: null,
        workloads: v.workloads,
        metrics: v.metrics,
        detail: v.detail,
        message: v.message,
        cancelReason: v.cancelReason,
        pairs: v.pairs,
        score: v.score,
        scoreInterval: v.scoreInterval,
        absoluteInterval: v.absoluteInterval,
        scoring: v.scoring,
        promptNonce: v.promptNonce,
        failureCode: v.failureCode,
        quotaRefunded: v.quotaRefunded,
      },
    );
  }

  /**
   * → canceled. A run canceled before it started (queued or assigned) is refunded; a running one
   * is not. Null when the run had already ended.
   */
  async cancel(runId: string, c: { reason: string; message: string; at: Date }): Promise<RunEntity | null> {
    const set = `status = 'canceled', cancel_reason = $2, message = $3, finished_at = $4, lease_expires_at = NULL`;
    const args = [runId, c.reason, c.message, c.at];
    const before: unknown = await this.manager.query(
      `UPDATE runs SET ${set}, quota_refunded = true WHERE id = $1 AND status IN ('queued', 'assigned') RETURNING id`,
      args,
    );
    if (returned<{ id: string }>(before).length) return this.manager.findOneBy(RunEntity, { id: runId });
    const started: unknown = await this.manager.query(
      `UPDATE runs SET ${set} WHERE id = $1 AND status = 'running' RETURNING id`,
      args,
    );
    return returned<{ id: string }>(started).length ? this.manager.findOneBy(RunEntity, { id: runId }) : null;
  }

  /**
   * queued | assigned | running → failed as infra_error, refunded (ours, not the team's). With
   * `leaseLost` the failure is marked as the sweeper's lapsed lease, the one {@link reinstate} may
   * undo. Null when the run had already ended.
   */
  async failInfra(
    runId: string,
    f: { message: string; at: Date; leaseLost: boolean },
  ): Promise<RunEntity | null> {
    const raw: unknown = await this.manager.query(
      `UPDATE runs SET status = 'failed', failure_code = 'infra_error', message = $2, finished_at = $3,
              lease_expires_at = NULL, quota_refunded = true${f.leaseLost ? ', lease_lost_at = $3' : ''}
        WHERE id = $1 AND status IN ('queued', 'assigned', 'running') RETURNING id`,
      [runId, f.message, f.at],
    );
    return returned<{ id: string }>(raw).length ? this.manager.findOneBy(RunEntity, { id: runId }) : null;
  }

  /**
   * failed (lapsed lease) → assigned | running: only the sweeper's lapsed-lease failures of this
   * agent, before the whole-run deadline plus `graceSeconds`. Returns the ids changed.
   */
  async reinstate(
    agentId: string,
    runIds: string[],
    r: { leaseUntil: Date; graceSeconds: number; now: Date },
  ): Promise<string[]> {
    if (runIds.length === 0) return [];
    const raw: unknown = await this.manager.query(
      `UPDATE runs SET status = CASE WHEN started_at IS NULL THEN 'assigned' ELSE 'running' END,
              failure_code = NULL, message = NULL, finished_at = NULL, quota_refunded = false,
              lease_lost_at = NULL, lease_expires_at = $3
        WHERE id = ANY($2) AND agent_id = $1 AND status = 'failed' AND lease_lost_at IS NOT NULL
          AND (deadline_at IS NULL OR deadline_at + make_interval(secs => $4::int) > $5)
        RETURNING id`,
      [agentId, runIds, r.leaseUntil, r.graceSeconds, r.now],
    );
    return returned<{ id: string }>(raw).map((x) => x.id);
  }

  // --- the sweeper ------------------------------------------------------------------------------

  /** Runs whose agent stopped renewing the lease. */
  async expiredLeases(now: Date): Promise<{ id: string; agentId: string; leaseExpiresAt: Date }[]> {
    const rows: { id: string; agent_id: string; lease_expires_at: Date }[] = await this.manager.query(
      `SELECT id, agent_id, lease_expires_at FROM runs WHERE status IN ('assigned', 'running') AND lease_expires_at < $1 AND agent_id IS NOT NULL LIMIT 500`,
      [now],
    );
    return rows.map((r) => ({ id: r.id, agentId: r.agent_id, leaseExpiresAt: new Date(r.lease_expires_at) }));
  }

  /** Every active lease ends no sooner than `until` (after this process or its clock paused). */
  async extendLeases(until: Date): Promise<number> {
    const raw: unknown = await this.manager.query(
      `UPDATE runs SET lease_expires_at = $1 WHERE status IN ('assigned', 'running') AND agent_id IS NOT NULL AND (lease_expires_at IS NULL OR lease_expires_at < $1) RETURNING id`,
      [until],
    );
    return returned<{ id: string }>(raw).length;
  }

  /** Runs past their whole-run deadline (plus a grace for the agent's own verdict to land). */
  async overdue(cutoff: Date): Promise<string[]> {
    const rows: { id: string }[] = await this.manager.query(
      `SELECT id FROM runs WHERE status IN ('assigned', 'running') AND deadline_at < $1 LIMIT 500`,
      [cutoff],
    );
    return rows.map((r) => r.id);
  }

  // --- the organizer's changes ------------------------------------------------------------------

  /**
   * The organizer changed the whole-run limit: unfinished runs take it (deadlines from assignment);
   * a calibration run keeps its own, sized for its GPU budget.
   */
  async setLimitForUnfinished(benchmarkId: string, seconds: number): Promise<RunEntity[]> {
    const raw: unknown = await this.manager.query(
      `UPDATE runs SET run_time_limit_seconds = $2::int,
              deadline_at = CASE WHEN assigned_at IS NULL THEN NULL ELSE assigned_at + make_interval(secs => $2::int) END
        WHERE benchmark_id = $1 AND status IN ('queued', 'assigned', 'running')
          AND mode <> 'calibration' RETURNING id`,
      [benchmarkId, seconds],
    );
    const ids = returned<{ id: string }>(raw).map((r) => r.id);
    return ids.length ? this.manager.findBy(RunEntity, { id: In(ids) }) : [];
  }

  /**
   * An official, succeeded result → disqualified (off the leaderboard; its status and score stay as
   * measured). Null when the run is not such a result or is disqualified already: the condition is
   * in the statement, so two organizers acting at once disqualify it once.
   */
  async disqualify(runId: string, d: { by: string; reason: string; at: Date }): Promise<RunEntity | null> {
    const res = await this.manager
      .createQueryBuilder()
      .update(RunEntity)
      .set({ disqualifiedAt: d.at, disqualifiedBy: d.by, disqualifiedReason: d.reason })
      .where(`id = :runId AND disqualified_at IS NULL AND mode = 'official' AND status = 'succeeded'`, {
        runId,
      })
      .execute();
    return res.affected ? this.manager.findOneBy(RunEntity, { id: runId }) : null;
  }

  /**
   * An organizer's refund: the run stops counting against its holder's daily limit (its result, if
   * any, stays). Null when it was refunded already or is no team's run (a re-measure).
   */
  async refund(runId: string): Promise<RunEntity | null> {
    const res = await this.manager
      .createQueryBuilder()
      .update(RunEntity)
      .set({ quotaRefunded: true })
      .where('id = :runId AND NOT quota_refunded AND team_id IS NOT NULL', { runId })
      .execute();
    return res.affected ? this.manager.findOneBy(RunEntity, { id: runId }) : null;
  }

  /** Disqualified → counts again (if it still fits the rules in force). Null when it was not disqualified. */
  async requalify(runId: string): Promise<RunEntity | null> {
    const res = await this.manager
      .createQueryBuilder()
      .update(RunEntity)
      .set({ disqualifiedAt: null, disqualifiedBy: null, disqualifiedReason: null })
      .where('id = :runId AND disqualified_at IS NOT NULL', { runId })
      .execute();
    return res.affected ? this.manager.findOneBy(RunEntity, { id: runId }) : null;
  }

  /** Official runs under older rules stop ranking; public runs never ranked, so they are left alone. */
  async invalidateBefore(benchmarkId: string, rulesVersion: number, reason: string): Promise<number> {
    const raw: unknown = await this.manager.query(
      `UPDATE runs SET invalidated = true, invalidated_reason = $3
        WHERE benchmark_id = $1 AND rules_version < $2 AND mode = 'official' AND NOT invalidated RETURNING id`,
      [benchmarkId, rulesVersion, reason],
    );
    return returned<{ id: string }>(raw).length;
  }
}
