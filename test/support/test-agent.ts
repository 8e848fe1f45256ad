import { randomBytes, randomUUID } from 'node:crypto';
import type { BatchEntry, HarnessResultEvent, WorkloadSummary } from '@dryft/libs';
import { hashToken } from '@dryft/libs/node';
import { Clock } from '../../apps/api/src/common/clock';
import { RunLifecycleService } from '../../apps/api/src/runs/run-lifecycle.service';
import { RunQueue } from '../../apps/api/src/runs/run-queue';
import { RunEntity } from '../../apps/api/src/runs/run.entity';
import type { TestHub } from './hub';

/**
 * A stand-in for a GPU agent in API tests: it takes a queued run through RunQueue, the one writer of
 * a run's state, with the claim dispatch uses, then reports through the same RunLifecycleService the
 * /agents gateway uses.
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

  /**
   * queued → assigned through {@link RunQueue.markAssigned}, the statement dispatch claims with
   * (deadline from assignment, download token), for this run only and with a 60 s lease.
   */
  async claim(runId: string): Promise<void> {
    const run = await this.hub.dataSource.getRepository(RunEntity).findOneBy({ id: runId });
    const now = this.hub.app.get(Clock).now();
    const claimed = run
      ? await this.hub.app.get(RunQueue).markAssigned({
          agentId: this.id,
          agentName: this.name,
          slot: 0,
          benchmarkIds: [run.benchmarkId],
          allowOfficial: true,
          allowPublic: true,
          downloadTokenHash: hashToken(randomBytes(32).toString('base64url')),
          now,
          leaseUntil: new Date(now.getTime() + 60_000),
          hardware: run.hardware ?? 'cpu',
          only: runId,
        })
      : null;
    if (!claimed) throw new Error(`run ${runId} was not queued`);
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

  /** The verdict; `canceled` with a `cancelReason` as the agent stops a run itself (`run_time_limit`). */
  async finish(
    runId: string,
    result: Partial<HarnessResultEvent> & Pick<HarnessResultEvent, 'status'>,
    canceled = false,
    cancelReason?: string,
  ) {
    return this.lifecycle.finish(runId, this.id, {
      runId,
      lastSeq: this.seq.get(runId) ?? 0,
      canceled,
      ...(cancelReason ? { cancelReason } : {}),
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
