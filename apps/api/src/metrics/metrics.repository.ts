import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';

/** Unfinished runs grouped as the queue gauges need them (one row per group). */
export interface ActiveRunGroup {
  benchmark: string;
  /** The hardware key a run is pinned to; `any` for a run any agent may take. */
  hardware: string;
  mode: string;
  status: 'queued' | 'assigned' | 'running';
  count: number;
  oldestCreatedAt: Date;
}

/** An agent that is not revoked, with its slots and the runs it holds now. */
export interface AgentRow {
  connected: boolean;
  draining: boolean;
  lastHeartbeatAt: Date | null;
  slots: number;
  busySlots: number;
}

/** What a finished official run cost: its agent's GPU model and the candidate's own timed time. */
export interface OfficialRunCost {
  /** The agent's GPU model as it reported it (null: a CPU agent, or the agent is gone). */
  gpuModel: string | null;
  /** The run's timed (not warm-up) samples of the candidate: the sum of their totalMs. */
  candidateTimedMs: number;
}

/** The two reads a scrape makes: the gauges that live in the database, computed when asked. */
@Injectable()
export class MetricsRepository {
  constructor(private readonly dataSource: DataSource) {}

  async activeRuns(): Promise<ActiveRunGroup[]> {
    // IDX_runs_status_created serves the status filter: the scrape reads unfinished runs only.
    const rows: {
      benchmark: string;
      hardware: string;
      mode: string;
      status: ActiveRunGroup['status'];
      count: string;
      oldest: Date;
    }[] = await this.dataSource.query(
      `SELECT benchmark_id AS benchmark, COALESCE(hardware, 'any') AS hardware, mode, status,
              count(*) AS count, min(created_at) AS oldest
         FROM runs
        WHERE status IN ('queued', 'assigned', 'running')
        GROUP BY 1, 2, 3, 4`,
    );
    return rows.map((r) => ({
      benchmark: r.benchmark,
      hardware: r.hardware,
      mode: r.mode,
      status: r.status,
      count: Number(r.count),
      oldestCreatedAt: new Date(r.oldest),
    }));
  }

  /**
   * One read per finished official run (not per scrape). A run's samples are the candidate's own:
   * the reference's timings are folded into the pairs, never stored as samples.
   */
  async officialRunCost(runId: string): Promise<OfficialRunCost | null> {
    const rows: { gpu_model: string | null; accelerator: string | null; timed_ms: number | string | null }[] =
      await this.dataSource.query(
        `SELECT a.capabilities->>'gpuModel' AS gpu_model, a.capabilities->>'accelerator' AS accelerator,
                (SELECT sum(s.total_ms) FROM run_samples s WHERE s.run_id = r.id AND NOT s.warmup) AS timed_ms
           FROM runs r LEFT JOIN agents a ON a.id = r.agent_id
          WHERE r.id = $1`,
        [runId],
      );
    const row = rows[0];
    if (!row) return null;
    return {
      gpuModel: row.accelerator === 'gpu' ? row.gpu_model : null,
      candidateTimedMs: Number(row.timed_ms ?? 0),
    };
  }

  async agents(): Promise<AgentRow[]> {
    const rows: {
      connected: boolean;
      draining: boolean;
      last_heartbeat_at: Date | null;
      slots: number;
      busy: string;
    }[] = await this.dataSource.query(
      `SELECT a.connected, a.draining, a.last_heartbeat_at, jsonb_array_length(a.slots) AS slots,
              (SELECT count(*) FROM runs r
                WHERE r.agent_id = a.id AND r.status IN ('assigned', 'running')) AS busy
         FROM agents a
        WHERE a.revoked_at IS NULL`,
    );
    return rows.map((r) => ({
      connected: r.connected,
      draining: r.draining,
      lastHeartbeatAt: r.last_heartbeat_at ? new Date(r.last_heartbeat_at) : null,
      slots: Number(r.slots),
      busySlots: Number(r.busy),
    }));
  }
}
