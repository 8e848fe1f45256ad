import { Injectable } from '@nestjs/common';
import type {
  AgentCapabilities,
  BaselineFigures,
  HarnessCheckEvent,
  HarnessMetricEvent,
  HarnessSampleEvent,
  LogLine,
  RunStatus,
} from '@dryft/libs';
import { DataSource } from 'typeorm';
import { TransactionalRepository } from '../common/transactional-repository';
import { BaselineEntity } from './baseline.entity';
import { chunkLines, logChunk, newLines, type LogChunk } from './log-chunk';
import { RunCheckEntity } from './run-check.entity';
import { RunMetricEntity } from './run-metric.entity';
import { RunSampleEntity } from './run-sample.entity';
import { RunEntity } from './run.entity';

/**
 * The insert of one chunk of a run's log from parameter `$first` on (first seq, last seq, line
 * count, the lines: {@link chunkParams}); `$1` is the run id. A chunk already stored (the same
 * run and last seq: a resend) is not stored again.
 */
export const insertChunkFrom = (first: number): string =>
  `INSERT INTO run_log_chunks (run_id, first_seq, last_seq, line_count, lines)
   SELECT $1::uuid, $${first}::int, $${first + 1}::int, $${first + 2}::int, $${first + 3}::text`;

/** The four values {@link insertChunkFrom} reads. */
export const chunkParams = (c: LogChunk): unknown[] => [c.firstSeq, c.lastSeq, c.lineCount, c.lines];

export const ACTIVE_STATUSES: RunStatus[] = ['assigned', 'running'];

/** An agent as the waiting estimate sees it. */
export interface AgentRow {
  id: string;
  name: string;
  capabilities: AgentCapabilities | null;
  slots: { index: number; gpus: string[] }[];
  connected: boolean;
  draining: boolean;
  lastHeartbeatAt: Date | null;
}

/**
 * Reads of runs and what they produced (logs, samples, checks, metrics, baselines), and the insert
 * of a new run. Every change of a run's state goes through {@link RunQueue} (run-queue.ts).
 */
@Injectable()
export class RunsRepository extends TransactionalRepository {
  constructor(dataSource: DataSource) {
    super(dataSource);
  }

  insert(row: Partial<RunEntity>): Promise<RunEntity> {
    return this.manager.save(this.manager.create(RunEntity, row));
  }

  findById(id: string): Promise<RunEntity | null> {
    return this.manager.findOneBy(RunEntity, { id });
  }

  /** Locks the run row for the rest of the transaction: batches and the verdict of one run are serialized. */
  lock(id: string): Promise<RunEntity | null> {
    return this.manager
      .createQueryBuilder(RunEntity, 'r')
      .setLock('pessimistic_write')
      .where('r.id = :id', { id })
      .getOne();
  }

  save(run: RunEntity): Promise<RunEntity> {
    return this.manager.save(run);
  }

  /** Serializes quota decisions for one holder, bucket and day (concurrent requests cannot both take the last run). */
  async lockQuota(holder: string, bucket: string, day: string): Promise<void> {
    await this.manager.query('SELECT pg_advisory_xact_lock(hashtext($1))', [
      `quota:${holder}:${bucket}:${day}`,
    ]);
  }

  async countQuota(benchmarkId: string, holder: string, bucket: string, day: string): Promise<number> {
    const [{ n }] = await this.manager.query(
      `SELECT count(*)::int AS n FROM runs WHERE benchmark_id = $1 AND quota_holder = $2 AND quota_bucket = $3 AND quota_day = $4 AND NOT quota_refunded`,
      [benchmarkId, holder, bucket, day],
    );
    return n;
  }

  async countRefunded(benchmarkId: string, holder: string, bucket: string, day: string): Promise<number> {
    const [{ n }] = await this.manager.query(
      `SELECT count(*)::int AS n FROM runs WHERE benchmark_id = $1 AND quota_holder = $2 AND quota_bucket = $3 AND quota_day = $4 AND quota_refunded`,
      [benchmarkId, holder, bucket, day],
    );
    return n;
  }

  /** Unrevoked agents, for the waiting reason and estimate. */
  async agentsForCapacity(): Promise<AgentRow[]> {
    const rows: {
      id: string;
      name: string;
      capabilities: AgentCapabilities | null;
      slots: { index: number; gpus: string[] }[];
      connected: boolean;
      draining: boolean;
      last_heartbeat_at: Date | null;
    }[] = await this.manager.query(
      `SELECT id, name, capabilities, slots, connected, draining, last_heartbeat_at FROM agents WHERE revoked_at IS NULL ORDER BY created_at`,
    );
    return rows.map((r) => ({
      id: r.id,
      name: r.name,
      capabilities: r.capabilities ? { ...r.capabilities, cannotRun: r.capabilities.cannotRun ?? {} } : null,
      slots: r.slots,
      connected: r.connected,
      draining: r.draining,
      lastHeartbeatAt: r.last_heartbeat_at,
    }));
  }

  /** Runs in progress on these agents, with when they began. */
  async activeOn(agentIds: string[]): Promise<{ agentId: string; slot: number | null; since: Date }[]> {
    if (agentIds.length === 0) return [];
    const rows: { agent_id: string; slot: number | null; since: Date }[] = await this.manager.query(
      `SELECT agent_id, slot, coalesce(started_at, assigned_at, now()) AS since FROM runs
        WHERE status IN ('assigned', 'running') AND agent_id = ANY($1)`,
      [agentIds],
    );
    return rows.map((r) => ({ agentId: r.agent_id, slot: r.slot, since: r.since }));
  }

  /** Seconds from assignment to the end of the last runs of this benchmark, tier and mode. */
  async recentDurations(benchmarkId: string, tier: string | null, mode: string): Promise<number[]> {
    const rows: { s: number }[] = await this.manager.query(
      `SELECT extract(epoch FROM finished_at - assigned_at)::float8 AS s FROM runs
        WHERE benchmark_id = $1 AND tier IS NOT DISTINCT FROM $2 AND mode = $3
          AND status IN ('succeeded', 'failed') AND assigned_at IS NOT NULL AND finished_at IS NOT NULL
        ORDER BY finished_at DESC LIMIT 20`,
      [benchmarkId, tier, mode],
    );
    return rows.map((r) => r.s).filter((s) => Number.isFinite(s) && s >= 0);
  }

  async queuedPerBenchmark(): Promise<{ benchmarkId: string; count: number; oldest: Date }[]> {
    const rows: { benchmark_id: string; n: number; oldest: Date }[] = await this.manager.query(
      `SELECT benchmark_id, count(*)::int AS n, min(created_at) AS oldest FROM runs WHERE status = 'queued' GROUP BY benchmark_id`,
    );
    return rows.map((r) => ({ benchmarkId: r.benchmark_id, count: r.n, oldest: r.oldest }));
  }

  /** 1-based place in the queue of the run's benchmark (null unless queued). */
  async queuePosition(run: RunEntity): Promise<number | null> {
    if (run.status !== 'queued') return null;
    const [{ n }] = await this.manager.query(
      `SELECT count(*)::int AS n FROM runs WHERE status = 'queued' AND benchmark_id = $1 AND (created_at, id) < ($2, $3)`,
      [run.benchmarkId, run.createdAt, run.id],
    );
    return n + 1;
  }

  async listForTeam(
    teamId: string,
    opts: {
      benchmarkId?: string;
      status?: string;
      submissionId?: string;
      before?: { createdAt: Date; id: string };
      limit: number;
    },
  ) {
    const qb = this.manager.createQueryBuilder(RunEntity, 'r').where('r.team_id = :teamId', { teamId });
    if (opts.benchmarkId) qb.andWhere('r.benchmark_id = :b', { b: opts.benchmarkId });
    if (opts.status) qb.andWhere('r.status = :s', { s: opts.status });
    if (opts.submissionId) qb.andWhere('r.submission_id = :sid', { sid: opts.submissionId });
    if (opts.before)
      qb.andWhere('(r.created_at, r.id) < (:c, :i)', { c: opts.before.createdAt, i: opts.before.id });
    return qb.orderBy('r.created_at', 'DESC').addOrderBy('r.id', 'DESC').limit(opts.limit).getMany();
  }

  /** Runs not started yet of a user or a team, on one benchmark or all (null). */
  async unstartedOf(opts: {
    userId: string | null;
    teamId: string | null;
    benchmarkId: string | null;
  }): Promise<RunEntity[]> {
    const qb = this.manager
      .createQueryBuilder(RunEntity, 'r')
      .where(`r.status IN ('queued', 'assigned')`)
      .andWhere(`r.mode <> 'baseline'`)
      .andWhere(opts.userId ? 'r.created_by = :who' : 'r.team_id = :who', {
        who: opts.userId ?? opts.teamId,
      });
    if (opts.benchmarkId) qb.andWhere('r.benchmark_id = :b', { b: opts.benchmarkId });
    return qb.orderBy('r.created_at', 'ASC').getMany();
  }

  async activeRuns(): Promise<RunEntity[]> {
    return this.manager.find(RunEntity, { where: ACTIVE_STATUSES.map((status) => ({ status })) });
  }

  /**
   * One batch's lines as one chunk (runs/log-chunk.ts): only those past `lastSeq`, the highest seq
   * stored for the run, which the caller holds locked; so each line is stored once and the chunks
   * stay in order.
   */
  async insertLogs(runId: string, lines: LogLine[], lastSeq: number): Promise<void> {
    const fresh = newLines(lines, lastSeq);
    if (fresh.length === 0) return;
    await this.manager.query(`${insertChunkFrom(2)} ON CONFLICT DO NOTHING`, [
      runId,
      ...chunkParams(logChunk(fresh)),
    ]);
  }

  /**
   * Up to `limit` lines past seq `after`, in order: one query over the chunks that hold them. A
   * chunk is read only while the chunks before it surely hold fewer than `limit` lines past `after`.
   * The first may start at or before `after`: it surely holds its lines but those that could have a
   * seq from its first to `after` (seqs increase; at least one, since it ends past `after`).
   */
  async getLogs(runId: string, after: number, limit: number): Promise<LogLine[]> {
    const rows: { lines: string }[] = await this.manager.query(
      `SELECT lines FROM (
         SELECT last_seq, lines, sum(past) OVER w - past AS before
         FROM (
           SELECT last_seq, lines, greatest(1, line_count - greatest(0, $2 - first_seq + 1)) AS past
           FROM run_log_chunks WHERE run_id = $1 AND last_seq > $2
           ORDER BY last_seq LIMIT $3
         ) c
         WINDOW w AS (ORDER BY last_seq)
       ) c WHERE before < $3 ORDER BY last_seq`,
      [runId, after, limit],
    );
    const out: LogLine[] = [];
    for (const row of rows) {
      for (const line of chunkLines(row.lines)) {
        if (line.seq <= after) continue;
        if (out.length === limit) return out;
        out.push(line);
      }
    }
    return out;
  }

  async upsertSample(runId: string, s: HarnessSampleEvent): Promise<void> {
    await this.manager.upsert(
      RunSampleEntity,
      {
        runId,
        workload: s.workload,
        warmup: s.warmup,
        index: s.index,
        ttftMs: s.ttftMs,
        tpotMs: s.tpotMs,
        tps: s.tps,
        totalMs: s.totalMs,
        tokens: s.tokens,
        metrics: s.metrics ?? null,
      },
      ['runId', 'workload', 'warmup', 'index'],
    );
  }

  async upsertCheck(runId: string, c: HarnessCheckEvent): Promise<void> {
    await this.manager.upsert(RunCheckEntity, { runId, name: c.name, passed: c.passed, detail: c.detail }, [
      'runId',
      'name',
    ]);
  }

  async upsertMetric(runId: string, m: HarnessMetricEvent): Promise<void> {
    await this.manager.upsert(
      RunMetricEntity,
      { runId, name: m.name, step: m.step, value: m.value, elapsedMs: m.elapsedMs },
      ['runId', 'name', 'step'],
    );
  }

  /**
   * Caches baseline figures: the workloads measured replace their own entries and the others stay.
   * An official run measures the hidden workloads only, a re-measure all of them; replacing the
   * whole row would leave public runs with no figures for their workloads after every official run.
   * One statement, so two writers of the same key merge rather than overwrite each other.
   */
  async upsertBaseline(benchmarkId: string, rulesVersion: number, figures: BaselineFigures): Promise<void> {
    await this.manager.query(
      `INSERT INTO baselines (benchmark_id, hardware, rules_version, figures, measured_at)
       VALUES ($1, $2, $3, $4::jsonb, now())
       ON CONFLICT (benchmark_id, hardware, rules_version) DO UPDATE SET
         figures = jsonb_set(EXCLUDED.figures, '{workloads}',
                             (baselines.figures -> 'workloads') || (EXCLUDED.figures -> 'workloads')),
         measured_at = now()`,
      [benchmarkId, figures.hardware, rulesVersion, JSON.stringify(figures)],
    );
  }

  /** The cached baseline figures of a benchmark on this hardware under these rules. */
  async findBaseline(
    benchmarkId: string,
    hardware: string,
    rulesVersion: number,
  ): Promise<BaselineFigures | null> {
    const row = await this.manager.findOneBy(BaselineEntity, { benchmarkId, hardware, rulesVersion });
    return row?.figures ?? null;
  }

  /** Every cached baseline of a benchmark (all hardware keys and rules versions), newest first. */
  listBaselines(benchmarkId: string): Promise<BaselineEntity[]> {
    return this.manager.find(BaselineEntity, { where: { benchmarkId }, order: { measuredAt: 'DESC' } });
  }

  /** The unfinished baseline re-measure of a benchmark on a hardware key, if any. */
  pendingRemeasure(benchmarkId: string, hardware: string): Promise<RunEntity | null> {
    return this.manager
      .createQueryBuilder(RunEntity, 'r')
      .where(`r.mode = 'baseline' AND r.status IN ('queued', 'assigned', 'running')`)
      .andWhere('r.benchmark_id = :benchmarkId AND r.hardware = :hardware', { benchmarkId, hardware })
      .getOne();
  }

  /** A benchmark's latest baseline re-measures, newest first. */
  listRemeasures(benchmarkId: string, limit: number): Promise<RunEntity[]> {
    return this.manager.find(RunEntity, {
      where: { benchmarkId, mode: 'baseline' },
      order: { createdAt: 'DESC', id: 'DESC' },
      take: limit,
    });
  }

  async deleteBaselines(benchmarkId: string, hardware?: string): Promise<number> {
    const res = await this.manager.delete(
      BaselineEntity,
      hardware ? { benchmarkId, hardware } : { benchmarkId },
    );
    return res.affected ?? 0;
  }

  samples(runId: string): Promise<RunSampleEntity[]> {
    return this.manager.find(RunSampleEntity, {
      where: { runId },
      order: { workload: 'ASC', warmup: 'DESC', index: 'ASC' },
    });
  }

  checks(runId: string): Promise<RunCheckEntity[]> {
    return this.manager.find(RunCheckEntity, { where: { runId }, order: { name: 'ASC' } });
  }

  metrics(runId: string): Promise<RunMetricEntity[]> {
    return this.manager.find(RunMetricEntity, { where: { runId }, order: { name: 'ASC', step: 'ASC' } });
  }
}
