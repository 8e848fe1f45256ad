import { Injectable } from '@nestjs/common';
import type {
  AgentCapabilities,
  BaselineFigures,
  HarnessCheckEvent,
  HarnessMetricEvent,
  HarnessSampleEvent,
  RunStatus,
} from '@dryft/libs';
import { DataSource, In } from 'typeorm';
import { TransactionalRepository } from '../common/transactional-repository';
import { BaselineEntity } from './baseline.entity';
import { CalibrationRunEntity } from './calibration-run.entity';
import { CalibrationEntity } from './calibration.entity';
import { RunCheckEntity } from './run-check.entity';
import { RunMetricEntity } from './run-metric.entity';
import { RunSampleEntity } from './run-sample.entity';
import { RunEntity } from './run.entity';

/** The row of a `SELECT count(*)::int AS n` (the cast keeps it a number, not bigint's string). */
type CountRow = { n: number };

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

/** The runs whose durations estimate a queued run's wait: same benchmark, tier and mode. */
export interface DurationKey {
  benchmarkId: string;
  tier: string | null;
  mode: string;
}

export const durationKey = (k: DurationKey): string => JSON.stringify([k.benchmarkId, k.tier, k.mode]);

/**
 * Reads of runs and what they produced (samples, checks, metrics, baselines), and the insert of a
 * new run. Every change of a run's state goes through {@link RunQueue} (run-queue.ts); its log is
 * RunLog's (run-log.ts, run-log.repository.ts).
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

  /** Serializes queued-run decisions for one team (two requests cannot both take the last place). */
  async lockTeamQueue(teamId: string): Promise<void> {
    await this.manager.query('SELECT pg_advisory_xact_lock(hashtext($1))', [`queued-runs:${teamId}`]);
  }

  /** Runs of a team waiting in the queue (not yet assigned to an agent); an organizer's re-runs are not the team's. */
  async countQueued(teamId: string): Promise<number> {
    const [{ n }]: CountRow[] = await this.manager.query(
      `SELECT count(*)::int AS n FROM runs WHERE team_id = $1 AND status = 'queued' AND rerun_of IS NULL`,
      [teamId],
    );
    return n;
  }

  async countQuota(benchmarkId: string, holder: string, bucket: string, day: string): Promise<number> {
    const [{ n }]: CountRow[] = await this.manager.query(
      `SELECT count(*)::int AS n FROM runs WHERE benchmark_id = $1 AND quota_holder = $2 AND quota_bucket = $3 AND quota_day = $4 AND NOT quota_refunded`,
      [benchmarkId, holder, bucket, day],
    );
    return n;
  }

  async countRefunded(benchmarkId: string, holder: string, bucket: string, day: string): Promise<number> {
    const [{ n }]: CountRow[] = await this.manager.query(
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

  /**
   * Seconds from assignment to the end of the last 20 runs of each benchmark, tier and mode asked
   * for, in one query (a page of queued runs asks for several).
   */
  async recentDurations(keys: DurationKey[]): Promise<Map<string, number[]>> {
    const out = new Map<string, number[]>(keys.map((k) => [durationKey(k), []]));
    if (keys.length === 0) return out;
    const rows: { benchmark_id: string; tier: string | null; mode: string; s: number }[] =
      await this.manager.query(
        `SELECT k.benchmark_id, k.tier, k.mode, d.s
           FROM unnest($1::text[], $2::text[], $3::text[]) AS k(benchmark_id, tier, mode)
           CROSS JOIN LATERAL (
             SELECT extract(epoch FROM r.finished_at - r.assigned_at)::float8 AS s FROM runs r
              WHERE r.benchmark_id = k.benchmark_id AND r.tier IS NOT DISTINCT FROM k.tier AND r.mode = k.mode
                AND r.status IN ('succeeded', 'failed') AND r.assigned_at IS NOT NULL AND r.finished_at IS NOT NULL
              ORDER BY r.finished_at DESC LIMIT 20
           ) d`,
        [keys.map((k) => k.benchmarkId), keys.map((k) => k.tier), keys.map((k) => k.mode)],
      );
    for (const r of rows)
      if (Number.isFinite(r.s) && r.s >= 0)
        out.get(durationKey({ benchmarkId: r.benchmark_id, tier: r.tier, mode: r.mode }))?.push(r.s);
    return out;
  }

  async queuedPerBenchmark(): Promise<{ benchmarkId: string; count: number; oldest: Date }[]> {
    const rows: { benchmark_id: string; n: number; oldest: Date }[] = await this.manager.query(
      `SELECT benchmark_id, count(*)::int AS n, min(created_at) AS oldest FROM runs WHERE status = 'queued' GROUP BY benchmark_id`,
    );
    return rows.map((r) => ({ benchmarkId: r.benchmark_id, count: r.n, oldest: r.oldest }));
  }

  /**
   * 1-based place in the queue of the run's benchmark (null unless queued). Dispatch takes team runs
   * before an organizer's re-runs: a team run is placed among team runs only, a re-run after every
   * queued team run.
   */
  async queuePosition(run: RunEntity): Promise<number | null> {
    if (run.status !== 'queued') return null;
    const [{ n }]: CountRow[] = await this.manager.query(
      `SELECT count(*)::int AS n FROM runs WHERE status = 'queued' AND benchmark_id = $1
          AND ((created_at, id) < ($2, $3) AND (rerun_of IS NULL OR $4::boolean)
               OR (rerun_of IS NULL AND $4::boolean AND (created_at, id) > ($2, $3)))`,
      [run.benchmarkId, run.createdAt, run.id, run.rerunOf !== null && run.rerunOf !== undefined],
    );
    return n + 1;
  }

  /**
   * {@link queuePosition} of each queued run given (by id; the others have none), in one query.
   * Each run is placed by what the caller holds of it (its benchmark and creation), as one by one.
   */
  async queuePositions(runs: RunEntity[]): Promise<Map<string, number>> {
    const queued = runs.filter((r) => r.status === 'queued');
    if (queued.length === 0) return new Map();
    const rows: { id: string; n: number }[] = await this.manager.query(
      `SELECT v.id::text AS id,
              (SELECT count(*)::int FROM runs r
                WHERE r.status = 'queued' AND r.benchmark_id = v.benchmark_id
                  AND ((r.created_at, r.id) < (v.created_at, v.id) AND (r.rerun_of IS NULL OR v.rerun)
                       OR (r.rerun_of IS NULL AND v.rerun AND (r.created_at, r.id) > (v.created_at, v.id)))) AS n
         FROM unnest($1::uuid[], $2::text[], $3::timestamptz[], $4::boolean[]) AS v(id, benchmark_id, created_at, rerun)`,
      [
        queued.map((r) => r.id),
        queued.map((r) => r.benchmarkId),
        queued.map((r) => r.createdAt.toISOString()),
        queued.map((r) => r.rerunOf !== null && r.rerunOf !== undefined),
      ],
    );
    return new Map(rows.map((r) => [r.id, r.n + 1]));
  }

  /**
   * What a run's view names besides the run: its submission's name parts and its creator's login,
   * for every id given, in one query (ids not found are left out).
   */
  async viewNames(
    submissionIds: string[],
    userIds: string[],
  ): Promise<{
    submissions: Map<string, { sourceName: string; number: number }>;
    logins: Map<string, string>;
  }> {
    const submissions = new Map<string, { sourceName: string; number: number }>();
    const logins = new Map<string, string>();
    if (submissionIds.length === 0 && userIds.length === 0) return { submissions, logins };
    const rows: { kind: 'submission' | 'user'; id: string; name: string; number: number | null }[] =
      await this.manager.query(
        `SELECT 'submission' AS kind, id::text AS id, source_name AS name, number FROM submissions WHERE id = ANY($1::uuid[])
         UNION ALL
         SELECT 'user' AS kind, id::text AS id, login AS name, NULL::int AS number FROM users WHERE id = ANY($2::uuid[])`,
        [submissionIds, userIds],
      );
    for (const r of rows)
      if (r.kind === 'submission') submissions.set(r.id, { sourceName: r.name, number: r.number! });
      else logins.set(r.id, r.name);
    return { submissions, logins };
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
      .andWhere(`r.mode NOT IN ('baseline', 'calibration')`)
      .andWhere(opts.userId ? 'r.created_by = :who' : 'r.team_id = :who', {
        who: opts.userId ?? opts.teamId,
      });
    if (opts.benchmarkId) qb.andWhere('r.benchmark_id = :b', { b: opts.benchmarkId });
    return qb.orderBy('r.created_at', 'ASC').getMany();
  }

  async activeRuns(): Promise<RunEntity[]> {
    return this.manager.find(RunEntity, { where: ACTIVE_STATUSES.map((status) => ({ status })) });
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

  /**
   * Stores one calibration run's ratios and re-pools its key's K from every stored run (the
   * caller's transaction; an advisory lock per key serializes two parts ending at once, so each
   * pool sees the other's run). Returns the new pooled K.
   */
  async addCalibrationRun(
    row: Omit<CalibrationRunEntity, 'createdAt'>,
    pool: (runs: CalibrationRunEntity[]) => Pick<CalibrationEntity, 'k' | 'detail'>,
  ): Promise<CalibrationEntity> {
    await this.manager.query('SELECT pg_advisory_xact_lock(hashtext($1))', [
      `calibration:${row.benchmarkId}:${row.rulesVersion}:${row.hardware}`,
    ]);
    await this.manager.insert(CalibrationRunEntity, row);
    const runs = await this.calibrationRuns(row.benchmarkId, row.hardware, row.rulesVersion);
    const pooled = pool(runs);
    const entity = this.manager.create(CalibrationEntity, {
      benchmarkId: row.benchmarkId,
      hardware: row.hardware,
      rulesVersion: row.rulesVersion,
      k: pooled.k,
      detail: pooled.detail,
      seconds: runs.reduce((a, r) => a + r.seconds, 0),
    });
    return this.manager.save(entity);
  }

  /** The stored calibration runs of one key and rules version, oldest first. */
  calibrationRuns(
    benchmarkId: string,
    hardware: string,
    rulesVersion: number,
  ): Promise<CalibrationRunEntity[]> {
    return this.manager.find(CalibrationRunEntity, {
      where: { benchmarkId, hardware, rulesVersion },
      order: { createdAt: 'ASC', runId: 'ASC' },
    });
  }

  /** The pooled K of a benchmark on a hardware key under a rules version, if calibrated. */
  findCalibration(
    benchmarkId: string,
    hardware: string,
    rulesVersion: number,
  ): Promise<CalibrationEntity | null> {
    return this.manager.findOneBy(CalibrationEntity, { benchmarkId, hardware, rulesVersion });
  }

  /** Every pooled K of a benchmark (all keys and rules versions), newest rules first. */
  listCalibrations(benchmarkId: string): Promise<CalibrationEntity[]> {
    return this.manager.find(CalibrationEntity, {
      where: { benchmarkId },
      order: { rulesVersion: 'DESC', hardware: 'ASC' },
    });
  }

  /** Every stored calibration run of a benchmark, newest first. */
  listCalibrationRuns(benchmarkId: string): Promise<CalibrationRunEntity[]> {
    return this.manager.find(CalibrationRunEntity, {
      where: { benchmarkId },
      order: { createdAt: 'DESC', runId: 'DESC' },
    });
  }

  /** Forgets pooled K's and their runs (one key, or all); returns the pooled K's deleted. */
  async deleteCalibrations(benchmarkId: string, hardware?: string): Promise<number> {
    const where = hardware ? { benchmarkId, hardware } : { benchmarkId };
    await this.manager.delete(CalibrationRunEntity, where);
    const res = await this.manager.delete(CalibrationEntity, where);
    return res.affected ?? 0;
  }

  /** The unfinished calibration runs of a benchmark on a hardware key. */
  pendingCalibrations(benchmarkId: string, hardware: string): Promise<RunEntity[]> {
    return this.manager
      .createQueryBuilder(RunEntity, 'r')
      .where(`r.mode = 'calibration' AND r.status IN ('queued', 'assigned', 'running')`)
      .andWhere('r.benchmark_id = :benchmarkId AND r.hardware = :hardware', { benchmarkId, hardware })
      .orderBy('r.calibration_part', 'ASC')
      .getMany();
  }

  /** The unfinished baseline re-measure of a benchmark on a hardware key, if any. */
  pendingRemeasure(benchmarkId: string, hardware: string): Promise<RunEntity | null> {
    return this.manager
      .createQueryBuilder(RunEntity, 'r')
      .where(`r.mode = 'baseline' AND r.status IN ('queued', 'assigned', 'running')`)
      .andWhere('r.benchmark_id = :benchmarkId AND r.hardware = :hardware', { benchmarkId, hardware })
      .getOne();
  }

  /** A benchmark's latest baseline re-measures and calibration runs, newest first. */
  listRemeasures(benchmarkId: string, limit: number): Promise<RunEntity[]> {
    return this.manager.find(RunEntity, {
      where: { benchmarkId, mode: In(['baseline', 'calibration']) },
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
