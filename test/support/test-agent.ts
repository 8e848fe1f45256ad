import { randomUUID } from 'node:crypto';
import type { BatchEntry, HarnessResultEvent, WorkloadSummary } from '@dryft/libs';
import { RunLifecycleService } from '../../apps/api/src/runs/run-lifecycle.service';
import type { TestHub } from './hub';

/**
 * A stand-in for a GPU agent in API tests: it takes a queued run the way dispatch does (one
 * conditional UPDATE), then reports through the same RunLifecycleService the /agents gateway uses.
 * The real agent process is exercised by the end-to-end tests.
 */
export class TestAgent {
  readonly id = randomUUID();
  private seq = new Map<string, number>();
  private line = new Map<string, number>();

  constructor(
    private readonly hub: TestHub,
    readonly name = 'test-agent',
  ) {}

  private get lifecycle(): RunLifecycleService {
    return this.hub.app.get(RunLifecycleService);
  }

  async claim(runId: string): Promise<void> {
    const rows = await this.hub.dataSource.query(
      `UPDATE runs SET status = 'assigned', agent_id = $2, agent_name = $3, slot = 0, assigned_at = now(),
              lease_expires_at = now() + interval '60 seconds', deadline_at = now() + make_interval(secs => run_time_limit_seconds)
        WHERE id = $1 AND status = 'queued' RETURNING id`,
      [runId, this.id, this.name],
    );
    if ((Array.isArray(rows[0]) ? rows[0] : rows).length !== 1)
      throw new Error(`run ${runId} was not queued`);
  }

  async send(runId: string, entries: BatchEntry[]) {
    const seq = (this.seq.get(runId) ?? 0) + 1;
    this.seq.set(runId, seq);
    return this.lifecycle.storeBatch(runId, this.id, { runId, seq, entries });
  }

  async log(runId: string, ...texts: string[]) {
    const entries: BatchEntry[] = texts.map((text) => {
      const n = (this.line.get(runId) ?? 0) + 1;
      this.line.set(runId, n);
      return { type: 'log', n, ts: Date.now(), stream: 'out', text };
    });
    return this.send(runId, entries);
  }

  async finish(
    runId: string,
    result: Partial<HarnessResultEvent> & Pick<HarnessResultEvent, 'status'>,
    canceled = false,
  ) {
    return this.lifecycle.finish(runId, this.id, {
      runId,
      lastSeq: this.seq.get(runId) ?? 0,
      canceled,
      exitCode: 0,
      result: {
        type: 'result',
        failureCode: null,
        message: result.status,
        score: null,
        workloads: [],
        metrics: {},
        ...result,
      },
    });
  }

  /** Claim, stream a few lines and a sample, and succeed with `score`. */
  async complete(runId: string, score: number, lines = ['loading engine', 'measuring']) {
    await this.claim(runId);
    await this.log(runId, ...lines);
    await this.send(runId, [
      {
        type: 'event',
        ts: Date.now(),
        event: {
          type: 'sample',
          workload: 'b1-p16',
          index: 0,
          warmup: false,
          ttftMs: 5,
          tpotMs: 1.5,
          tps: 600,
          totalMs: 50,
          tokens: 32,
        },
      },
      {
        type: 'event',
        ts: Date.now(),
        event: { type: 'check', name: 'output', passed: true, detail: 'every token matched' },
      },
    ]);
    const workloads: WorkloadSummary[] = [
      {
        workload: 'b1-p16',
        samples: 1,
        tps: 600,
        ttftMs: 5,
        tpotMs: 1.5,
        totalMs: 50,
        spreadPct: 0,
        speedup: score / 100,
      },
    ];
    return this.finish(runId, { status: 'succeeded', score, workloads, message: 'All checks passed.' });
  }
}
