import { Injectable } from '@nestjs/common';
import type { BaselineFigures } from '@dryft/libs';
import { DataSource, IsNull } from 'typeorm';
import { TransactionalRepository } from '../common/transactional-repository';
import { RunEntity } from '../runs/run.entity';
import { SubmissionEntity } from '../submissions/submission.entity';
import { AgentEntity } from './agent.entity';

/** TypeORM answers UPDATE … RETURNING with [rows, count]. */
function returned<T>(raw: unknown): T[] {
  const arr = raw as unknown[];
  return (Array.isArray(arr[0]) ? arr[0] : arr) as T[];
}

export interface ClaimRequest {
  agentId: string;
  agentName: string;
  slot: number;
  /** Benchmarks this agent may run (hardware and capabilities already matched). */
  benchmarkIds: string[];
  allowOfficial: boolean;
  allowPublic: boolean;
  downloadTokenHash: string;
  now: Date;
  leaseUntil: Date;
}

export interface ActiveRunRow {
  id: string;
  agentId: string | null;
  slot: number | null;
  mode: 'public' | 'official';
  status: string;
  lastBatchSeq: number;
}

/** Agents, and the queries of dispatch, leases and downloads against the runs table. */
@Injectable()
export class AgentsRepository extends TransactionalRepository {
  constructor(dataSource: DataSource) {
    super(dataSource);
  }

  insert(row: Partial<AgentEntity>): Promise<AgentEntity> {
    return this.manager.save(this.manager.create(AgentEntity, row));
  }

  save(agent: AgentEntity): Promise<AgentEntity> {
    return this.manager.save(agent);
  }

  findById(id: string): Promise<AgentEntity | null> {
    return this.manager.findOneBy(AgentEntity, { id });
  }

  findByTokenHash(hash: string): Promise<AgentEntity | null> {
    return this.manager.findOneBy(AgentEntity, { tokenHash: hash });
  }

  findActiveByName(name: string): Promise<AgentEntity | null> {
    return this.manager.findOneBy(AgentEntity, { name, revokedAt: IsNull() });
  }

  list(): Promise<AgentEntity[]> {
    return this.manager.find(AgentEntity, { order: { createdAt: 'ASC' } });
  }

  async update(id: string, set: Partial<AgentEntity>): Promise<void> {
    await this.manager.update(AgentEntity, { id }, set);
  }

  /** Runs each agent holds now (assigned or running), for views and slot accounting. */
  async activeRunsByAgent(agentIds?: string[]): Promise<ActiveRunRow[]> {
    const rows: {
      id: string;
      agent_id: string;
      slot: number | null;
      mode: 'public' | 'official';
      status: string;
      last_batch_seq: number;
    }[] = await this.manager.query(
      `SELECT id, agent_id, slot, mode, status, last_batch_seq FROM runs
          WHERE status IN ('assigned', 'running') AND agent_id IS NOT NULL ${agentIds ? 'AND agent_id = ANY($1)' : ''}
          ORDER BY assigned_at`,
      agentIds ? [agentIds] : [],
    );
    return rows.map((r) => ({
      id: r.id,
      agentId: r.agent_id,
      slot: r.slot,
      mode: r.mode,
      status: r.status,
      lastBatchSeq: r.last_batch_seq,
    }));
  }

  async runsByIds(ids: string[]): Promise<ActiveRunRow[]> {
    if (ids.length === 0) return [];
    const rows: {
      id: string;
      agent_id: string | null;
      slot: number | null;
      mode: 'public' | 'official';
      status: string;
      last_batch_seq: number;
    }[] = await this.manager.query(
      `SELECT id, agent_id, slot, mode, status, last_batch_seq FROM runs WHERE id = ANY($1)`,
      [ids],
    );
    return rows.map((r) => ({
      id: r.id,
      agentId: r.agent_id,
      slot: r.slot,
      mode: r.mode,
      status: r.status,
      lastBatchSeq: r.last_batch_seq,
    }));
  }

  /**
   * Claims the next eligible queued run for one slot, in one statement. `FOR UPDATE SKIP LOCKED` is
   * the arbiter between dispatchers (replicas, concurrent triggers): a row another transaction is
   * claiming is skipped, never claimed twice. Fairness: the team with the fewest runs in progress
   * goes first, then the team served least recently (so a burst from one team alternates with
   * everyone else's runs instead of starving them on a one-slot agent), then the oldest run. The deadline counts from assignment, with the limit in force.
   */
  async claimNext(req: ClaimRequest): Promise<RunEntity | null> {
    if (req.benchmarkIds.length === 0 || (!req.allowOfficial && !req.allowPublic)) return null;
    const modes = [...(req.allowPublic ? ['public'] : []), ...(req.allowOfficial ? ['official'] : [])];
    const raw = await this.manager.query(
      `WITH candidate AS (
         SELECT r.id FROM runs r
          WHERE r.status = 'queued' AND r.benchmark_id = ANY($1) AND r.mode = ANY($2)
          ORDER BY (SELECT count(*) FROM runs a WHERE a.team_id = r.team_id AND a.status IN ('assigned', 'running')),
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
      ],
    );
    const rows = returned<{ id: string }>(raw);
    if (rows.length === 0) return null;
    return this.manager.findOneBy(RunEntity, { id: rows[0].id });
  }

  /** Puts an assigned, never-started run back in the queue (refused or handed back by its agent). */
  async requeue(runId: string, agentId: string): Promise<boolean> {
    const raw = await this.manager.query(
      `UPDATE runs SET status = 'queued', agent_id = NULL, agent_name = NULL, slot = NULL, assigned_at = NULL,
              lease_expires_at = NULL, deadline_at = NULL, download_token_hash = NULL
        WHERE id = $1 AND agent_id = $2 AND status = 'assigned' AND last_batch_seq = 0 AND started_at IS NULL
       RETURNING id`,
      [runId, agentId],
    );
    return returned(raw).length > 0;
  }

  /** Consumes a one-time download token: the first request for it wins, any later one finds nothing. */
  async consumeDownloadToken(
    hash: string,
    agentId: string,
  ): Promise<{ run: RunEntity; submission: SubmissionEntity } | null> {
    const raw = await this.manager.query(
      `UPDATE runs SET download_token_hash = NULL
        WHERE download_token_hash = $1 AND agent_id = $2 AND status IN ('assigned', 'running')
       RETURNING id`,
      [hash, agentId],
    );
    const rows = returned<{ id: string }>(raw);
    if (rows.length === 0) return null;
    const run = await this.manager.findOneByOrFail(RunEntity, { id: rows[0].id });
    const submission = await this.manager.findOneByOrFail(SubmissionEntity, { id: run.submissionId });
    return { run, submission };
  }

  findSubmission(id: string): Promise<SubmissionEntity | null> {
    return this.manager.findOneBy(SubmissionEntity, { id });
  }

  async findBaseline(
    benchmarkId: string,
    hardware: string,
    rulesVersion: number,
  ): Promise<BaselineFigures | null> {
    const rows: { figures: BaselineFigures }[] = await this.manager.query(
      'SELECT figures FROM baselines WHERE benchmark_id = $1 AND hardware = $2 AND rules_version = $3',
      [benchmarkId, hardware, rulesVersion],
    );
    return rows[0]?.figures ?? null;
  }

  /** Runs whose agent stopped renewing the lease. */
  async expiredLeases(now: Date): Promise<{ id: string; agentId: string }[]> {
    const rows: { id: string; agent_id: string }[] = await this.manager.query(
      `SELECT id, agent_id FROM runs WHERE status IN ('assigned', 'running') AND lease_expires_at < $1 AND agent_id IS NOT NULL LIMIT 500`,
      [now],
    );
    return rows.map((r) => ({ id: r.id, agentId: r.agent_id }));
  }

  /** Every active lease ends no sooner than `until` (after this process or its clock paused). */
  async extendLeases(until: Date): Promise<number> {
    const raw = await this.manager.query(
      `UPDATE runs SET lease_expires_at = $1 WHERE status IN ('assigned', 'running') AND agent_id IS NOT NULL AND (lease_expires_at IS NULL OR lease_expires_at < $1) RETURNING id`,
      [until],
    );
    const rows = (Array.isArray(raw[0]) ? raw[0] : raw) as unknown[];
    return rows.length;
  }

  /** Runs past their whole-run deadline (plus a grace for the agent's own verdict to land). */
  async overdue(cutoff: Date): Promise<string[]> {
    const rows: { id: string }[] = await this.manager.query(
      `SELECT id FROM runs WHERE status IN ('assigned', 'running') AND deadline_at < $1 LIMIT 500`,
      [cutoff],
    );
    return rows.map((r) => r.id);
  }

  async unavailableAgentIds(ids: string[]): Promise<string[]> {
    const rows: { id: string }[] = await this.manager.query(
      `SELECT id FROM agents WHERE id = ANY($1) AND (draining OR revoked_at IS NOT NULL)`,
      [ids],
    );
    return rows.map((r) => r.id);
  }

  /** Whether any run waits that some agent could take (cheap check before a dispatch pass). */
  async queuedBenchmarks(): Promise<string[]> {
    const rows: { benchmark_id: string }[] = await this.manager.query(
      `SELECT DISTINCT benchmark_id FROM runs WHERE status = 'queued'`,
    );
    return rows.map((r) => r.benchmark_id);
  }
}
