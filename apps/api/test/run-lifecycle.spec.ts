import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { DEFAULT_LOG_LIMITS, headLines, wholeRunLimitCancelReason, wholeRunLimitMessage } from '@dryft/libs';
import type { HarnessResultEvent, RunBatch, RunFinished } from '@dryft/libs';
import type { BenchmarkRegistry } from '../src/benchmarks/benchmark-registry';
import { Clock } from '../src/common/clock';
import type { EventBus } from '../src/common/event-bus';
import type { Config } from '../src/config/config';
import { RunLifecycleService, verdictOf } from '../src/runs/run-lifecycle.service';
import type { RunEntity } from '../src/runs/run.entity';
import { chunkLines, RunLog, type LogChunk, type RunHead } from '../src/runs/run-log';
import type { RunLogRepository } from '../src/runs/run-log.repository';
import type { RunQueue, RunVerdict } from '../src/runs/run-queue';
import type { RunViews } from '../src/runs/run-views';
import type { RunsRepository } from '../src/runs/runs.repository';
import { sampleEvent } from '../../../libs/test/fixtures';
import { aResult, aRun } from './builders';

/** The lifecycle over recording stand-ins for its repositories (the rules only, no database). */
function lifecycle(runs: RunEntity[]) {
  const byId = new Map(runs.map((r) => [r.id, r]));
  const calls: string[] = [];
  const verdicts: RunVerdict[] = [];
  const emitted: string[] = [];
  // The runs read outside a transaction's lock (findById).
  const reads: string[] = [];
  const row = (r: RunEntity) => ({
    id: r.id,
    agentId: r.agentId,
    slot: r.slot,
    mode: r.mode,
    status: r.status,
    lastBatchSeq: r.lastBatchSeq,
    deadlineAt: r.deadlineAt ?? null,
  });
  const repo = {
    transaction: async <T>(work: (tx: unknown) => Promise<T>) => work(repo),
    lock: async (id: string) => byId.get(id) ?? null,
    findById: async (id: string) => {
      reads.push(id);
      return byId.get(id) ?? null;
    },
    upsertSample: async () => void calls.push('sample'),
    upsertCheck: async () => void calls.push('check'),
    upsertMetric: async () => void calls.push('metric'),
    upsertBaseline: async () => void calls.push('baseline'),
  };
  const queue = {
    within: () => queue,
    markRunning: async (id: string, at: Date) => {
      const r = byId.get(id);
      if (!r || r.status !== 'assigned') return null;
      Object.assign(r, { status: 'running', startedAt: at });
      return r;
    },
    recordBatch: async (r: RunEntity) => void calls.push(`record ${r.lastBatchSeq} ${r.status}`),
    finish: async (id: string, v: RunVerdict) => {
      calls.push(`finish ${v.status}`);
      verdicts.push(v);
    },
    renewLeases: async (_a: string, ids: string[]) => void calls.push(`renew ${ids.join(',')}`),
    reinstate: async (agentId: string, ids: string[]) => {
      calls.push(`reinstate ${ids.length}`);
      const back = ids.filter((id) => {
        const r = byId.get(id);
        return r && r.agentId === agentId && r.status === 'failed' && r.leaseLostAt;
      });
      for (const id of back) Object.assign(byId.get(id)!, { status: 'running', leaseLostAt: null });
      return back;
    },
    runsByIds: async (ids: string[]) => runs.filter((r) => ids.includes(r.id)).map(row),
    activeRunsByAgent: async ([agentId]: string[]) =>
      runs.filter((r) => r.agentId === agentId && ['assigned', 'running'].includes(r.status)).map(row),
    requeue: async (id: string) => {
      const r = byId.get(id)!;
      if (r.status !== 'assigned' || r.startedAt) return false;
      calls.push(`requeue ${id}`);
      r.status = 'queued';
      return true;
    },
    failInfra: async (id: string, f: { leaseLost: boolean }) => {
      calls.push(`fail ${id} lapsed=${f.leaseLost}`);
      return byId.get(id) ?? null;
    },
  };
  // The log's statements: a chunk stored, and the one-statement store of the next batch.
  const store = {
    within: () => store,
    insertChunk: async (_id: string, chunk: LogChunk) =>
      void calls.push(
        `logs ${chunkLines(chunk.lines)
          .map((l) => l.seq)
          .join(',')}`,
      ),
    // The one-statement store: writes only while the row holds what the caller last stored.
    recordHeadBatch: async (was: RunHead, now: RunHead, chunk: LogChunk | null) => {
      const seqs = chunk ? chunkLines(chunk.lines).map((l) => l.seq) : [];
      const r = byId.get(was.runId)!;
      const same =
        r.agentId === was.agentId &&
        r.status === 'running' &&
        !r.logTail &&
        r.lastBatchSeq === was.lastBatchSeq &&
        r.lastLogSeq === was.lastLogSeq &&
        r.logLines === was.logLines &&
        String(r.logBytes) === was.logBytes;
      calls.push(`head ${now.lastBatchSeq} ${same ? seqs.join(',') : 'moved on'}`);
      if (same)
        Object.assign(r, {
          lastBatchSeq: now.lastBatchSeq,
          lastLogSeq: now.lastLogSeq,
          logLines: now.logLines,
          logBytes: now.logBytes,
        });
      return same;
    },
    clearTail: async () => undefined,
  };
  // No definition registered: the default log limits (DEFAULT_LOG_LIMITS).
  const registry = { get: () => undefined };
  const log = new RunLog(
    store as unknown as RunLogRepository,
    repo as unknown as RunsRepository,
    registry as unknown as BenchmarkRegistry,
    new Clock(),
  );
  const views = {
    view: async (r: RunEntity) => ({ id: r.id, status: r.status }),
    viewById: async (id: string) => (byId.has(id) ? views.view(byId.get(id)!) : null),
    resultOf: async () => ({}),
  };
  // What run.status said, in order (the other events are named in `emitted` alone).
  const statuses: string[] = [];
  // (run.batch_handled is the metrics' timing of every batch: not a reaction these tests are about)
  const bus = {
    emit: (event: string, payload?: { run?: { status: string } }) => {
      if (event === 'run.batch_handled') return;
      emitted.push(event);
      if (event === 'run.status' && payload?.run) statuses.push(payload.run.status);
    },
  };
  const config = { AGENT_LEASE_SECONDS: 30, DEADLINE_GRACE_SECONDS: 10 } as Config;
  const service = new RunLifecycleService(
    repo as unknown as RunsRepository,
    queue as unknown as RunQueue,
    log,
    views as unknown as RunViews,
    new Clock(),
    bus as unknown as EventBus,
    config,
  );
  return { service, log, calls, verdicts, emitted, statuses, reads };
}

const logBatch = (runId: string, seq: number, first: number, n: number) => ({
  runId,
  seq,
  entries: Array.from({ length: n }, (_, i) => ({
    type: 'log' as const,
    n: first + i,
    ts: 1,
    stream: 'stdout' as const,
    text: `line ${first + i}`,
  })),
});

const finished = (runId: string, over: Partial<RunFinished> = {}): RunFinished => ({
  runId,
  lastSeq: 0,
  canceled: false,
  exitCode: 0,
  result: aResult(),
  ...over,
});

describe('RunLifecycleService: batches are stored exactly once, in order', () => {
  it('stores the next batch, and the first one moves assigned → running', async () => {
    const run = aRun();
    const { service, calls, emitted } = lifecycle([run]);
    expect(await service.storeBatch(run.id, run.agentId!, logBatch(run.id, 1, 1, 2))).toEqual({
      ok: true,
      ackedSeq: 1,
    });
    expect(calls).toEqual(['logs 1,2', 'record 1 running']);
    expect(run.startedAt).toBeInstanceOf(Date);
    expect(emitted).toContain('run.logs');
  });

  it('acks a resend (seq at or below the stored one) without storing it again', async () => {
    const run = aRun({ status: 'running', lastBatchSeq: 3 });
    const { service, calls } = lifecycle([run]);
    expect(await service.storeBatch(run.id, run.agentId!, logBatch(run.id, 2, 5, 1))).toEqual({
      ok: true,
      ackedSeq: 3,
    });
    expect(calls).toEqual([]);
  });

  it('refuses a batch past the next one with the stored seq, so the agent resends from there', async () => {
    const run = aRun({ status: 'running', lastBatchSeq: 3 });
    const { service, calls } = lifecycle([run]);
    const ack = await service.storeBatch(run.id, run.agentId!, logBatch(run.id, 5, 9, 1));
    expect(ack).toMatchObject({ ok: false, ackedSeq: 3, error: { code: 'batch_out_of_order' } });
    expect(ack.error?.message).toContain('Expected batch 4');
    expect(calls).toEqual([]);
  });

  it("tells another agent to stop, and an ended run's agent too", async () => {
    const run = aRun({ status: 'running' });
    const ended = aRun({ status: 'canceled', lastBatchSeq: 2 });
    const { service, calls } = lifecycle([run, ended]);
    expect(await service.storeBatch(run.id, randomUUID(), logBatch(run.id, 1, 1, 1))).toMatchObject({
      ok: false,
      stop: true,
      error: { code: 'run_not_assigned' },
    });
    expect(await service.storeBatch(ended.id, ended.agentId!, logBatch(ended.id, 3, 1, 1))).toEqual({
      ok: true,
      ackedSeq: 2,
      stop: true,
    });
    expect(calls).toEqual([]);
  });

  it('reinstates a run failed for a lapsed lease when its own agent reports it, then stores the batch', async () => {
    const run = aRun({
      status: 'failed',
      failureCode: 'infra_error',
      leaseLostAt: new Date(),
      startedAt: new Date(),
    });
    const { service, calls } = lifecycle([run]);
    expect(await service.storeBatch(run.id, run.agentId!, logBatch(run.id, 1, 1, 1))).toEqual({
      ok: true,
      ackedSeq: 1,
    });
    expect(calls).toEqual(['reinstate 1', 'logs 1', 'record 1 running']);
  });

  it('announces a reinstated run as running before its lines, from the run the batch stored', async () => {
    const run = aRun({ status: 'failed', leaseLostAt: new Date(), startedAt: new Date() });
    const { service, emitted, statuses, reads } = lifecycle([run]);
    await service.storeBatch(run.id, run.agentId!, logBatch(run.id, 1, 1, 1));
    expect(emitted).toEqual(['run.status', 'run.logs']);
    expect(statuses).toEqual(['running']);
    expect(reads).toEqual([]);
  });

  it('announces a reinstated run whose batch was a resend, and acks the stored seq', async () => {
    const run = aRun({ status: 'failed', leaseLostAt: new Date(), startedAt: new Date(), lastBatchSeq: 3 });
    const { service, calls, emitted, statuses } = lifecycle([run]);
    expect(await service.storeBatch(run.id, run.agentId!, logBatch(run.id, 2, 1, 1))).toEqual({
      ok: true,
      ackedSeq: 3,
    });
    expect(calls).toEqual(['reinstate 1']);
    expect(emitted).toEqual(['run.status']);
    expect(statuses).toEqual(['running']);
  });

  it('never reinstates a run that failed for another cause than a lapsed lease', async () => {
    const run = aRun({ status: 'failed', failureCode: 'infra_error', startedAt: new Date() });
    const { service, calls, emitted } = lifecycle([run]);
    expect(await service.storeBatch(run.id, run.agentId!, logBatch(run.id, 1, 1, 1))).toEqual({
      ok: true,
      ackedSeq: 0,
      stop: true,
    });
    expect(calls).toEqual([]);
    expect(emitted).toEqual([]);
  });
});

describe('RunLifecycleService: the next batch of a running run in one statement', () => {
  const started = async (over: Partial<RunEntity> = {}) => {
    const run = aRun(over);
    const l = lifecycle([run]);
    await l.service.storeBatch(run.id, run.agentId!, logBatch(run.id, 1, 1, 2));
    l.calls.length = 0;
    l.emitted.length = 0;
    return { run, ...l };
  };

  it('stores the batch after one the locked path stored, counts its lines and sends them', async () => {
    const { run, service, calls, emitted } = await started();
    expect(await service.storeBatch(run.id, run.agentId!, logBatch(run.id, 2, 3, 2))).toEqual({
      ok: true,
      ackedSeq: 2,
    });
    expect(await service.storeBatch(run.id, run.agentId!, logBatch(run.id, 3, 5, 1))).toEqual({
      ok: true,
      ackedSeq: 3,
    });
    expect(calls).toEqual(['head 2 3,4', 'head 3 5']);
    expect(emitted).toEqual(['run.logs', 'run.logs']);
    expect(run).toMatchObject({ lastBatchSeq: 3, lastLogSeq: 5, logLines: 5 });
    expect(Number(run.logBytes)).toBe(5 * 'line n'.length);
  });

  it('takes the locked path when the row moved on (canceled meanwhile): the agent is told to stop', async () => {
    const { run, service, log, calls, emitted } = await started();
    run.status = 'canceled';
    expect(await service.storeBatch(run.id, run.agentId!, logBatch(run.id, 2, 3, 1))).toEqual({
      ok: true,
      ackedSeq: 1,
      stop: true,
    });
    expect(calls).toEqual(['head 2 moved on']);
    expect(emitted).toEqual([]);
    expect(log.heads.get(run.id)).toBeUndefined();
  });

  it('takes the locked path when another replica stored the next batches: a resend is acked, not stored', async () => {
    const { run, service, calls } = await started();
    Object.assign(run, { lastBatchSeq: 3, lastLogSeq: 6, logLines: 6 });
    expect(await service.storeBatch(run.id, run.agentId!, logBatch(run.id, 2, 3, 2))).toEqual({
      ok: true,
      ackedSeq: 3,
    });
    expect(calls).toEqual(['head 2 moved on']);
  });

  it('stores a big batch in one statement too, its lines in seq order and each once', async () => {
    const { run, service, calls } = await started();
    await service.storeBatch(run.id, run.agentId!, logBatch(run.id, 2, 3, 5000));
    expect(calls).toEqual(['head 2 ' + Array.from({ length: 5000 }, (_, i) => i + 3).join(',')]);
    calls.length = 0;
    // A line already stored (5002), two out of order and one twice: stored once each, in order.
    const mixed = logBatch(run.id, 3, 5002, 1);
    const [stored] = mixed.entries;
    const at = (n: number) => ({ ...stored, n });
    mixed.entries = [at(5002), at(5005), at(5003), at(5005), at(5004)];
    expect(await service.storeBatch(run.id, run.agentId!, mixed)).toEqual({ ok: true, ackedSeq: 3 });
    expect(calls).toEqual(['head 3 5003,5004,5005']);
    expect(run).toMatchObject({ lastLogSeq: 5005, logLines: 5005 });
  });

  it('leaves harness events and a batch that fills the head to the locked path', async () => {
    const { run, service, log, calls } = await started();
    const sample = sampleEvent();
    const withEvent = { runId: run.id, seq: 2, entries: [{ type: 'event', ts: 1, event: sample }] };
    await service.storeBatch(run.id, run.agentId!, withEvent as RunBatch);
    expect(calls).toEqual(['sample', 'record 2 running']);
    calls.length = 0;
    // 100 lines left in the head (DEFAULT_LOG_LIMITS): 101 open the tail, which the locked path keeps.
    run.logLines = headLines(DEFAULT_LOG_LIMITS) - 100;
    log.heads.remember({ ...log.heads.get(run.id)!, logLines: run.logLines });
    await service.storeBatch(run.id, run.agentId!, logBatch(run.id, 3, 3, 101));
    expect(calls[0]).toMatch(/^logs 3,.*,102$/);
    expect(run.logTail?.lines).toHaveLength(1);
    expect(log.heads.get(run.id)).toBeUndefined();
  });

  it('stores the first batch of a run its agent reported started in one statement', async () => {
    const run = aRun();
    const { service, calls, emitted } = lifecycle([run]);
    await service.markStarted(run.id, run.agentId!);
    expect(await service.storeBatch(run.id, run.agentId!, logBatch(run.id, 1, 1, 2))).toEqual({
      ok: true,
      ackedSeq: 1,
    });
    expect(calls).toEqual(['head 1 1,2']);
    expect(emitted).toEqual(['run.status', 'run.logs']);
  });

  it('forgets a run at its verdict', async () => {
    const { run, service, log } = await started();
    expect(log.heads.get(run.id)).toMatchObject({ lastBatchSeq: 1, lastLogSeq: 2 });
    await service.finish(run.id, run.agentId!, finished(run.id, { lastSeq: 1 }));
    expect(log.heads.size).toBe(0);
  });
});

describe('RunLifecycleService: the verdict is applied once', () => {
  it('stores the verdict and announces the run', async () => {
    const run = aRun({ status: 'running', lastBatchSeq: 2 });
    const { service, calls, verdicts, emitted } = lifecycle([run]);
    expect(await service.finish(run.id, run.agentId!, finished(run.id, { lastSeq: 2 }))).toEqual({
      ok: true,
    });
    expect(calls).toEqual(['finish succeeded']);
    expect(verdicts[0]).toMatchObject({ status: 'succeeded', score: 123.4, quotaRefunded: false });
    expect(emitted).toEqual(['run.status', 'run.result', 'run.finished']);
  });

  it('answers a resend after a lost ack ok without changing anything', async () => {
    const run = aRun({ status: 'succeeded', score: 1 });
    const { service, calls, emitted } = lifecycle([run]);
    expect(await service.finish(run.id, run.agentId!, finished(run.id))).toEqual({ ok: true });
    expect(calls).toEqual([]);
    expect(emitted).toEqual([]);
  });

  it('waits for every batch before the verdict, and refuses another agent', async () => {
    const run = aRun({ status: 'running', lastBatchSeq: 1 });
    const { service, calls } = lifecycle([run]);
    const early = await service.finish(run.id, run.agentId!, finished(run.id, { lastSeq: 3 }));
    expect(early.ok).toBe(false);
    expect(early.error?.code).toBe('batches_missing');
    expect(early.error?.message).toContain('Batches up to 3 are not all stored (have 1)');
    const stranger = await service.finish(run.id, randomUUID(), finished(run.id, { lastSeq: 1 }));
    expect(stranger).toEqual({
      ok: false,
      error: { code: 'run_not_assigned', message: 'This run is not assigned to this agent.' },
    });
    expect(calls).toEqual([]);
  });

  it('reinstates a lapsed run for its verdict; refused for missing batches, it is announced running', async () => {
    const run = aRun({ status: 'failed', leaseLostAt: new Date(), startedAt: new Date(), lastBatchSeq: 1 });
    const { service, calls, emitted, statuses, reads } = lifecycle([run]);
    const early = await service.finish(run.id, run.agentId!, finished(run.id, { lastSeq: 3 }));
    expect(early.error?.code).toBe('batches_missing');
    expect(calls).toEqual(['reinstate 1']);
    expect(emitted).toEqual(['run.status']);
    expect(statuses).toEqual(['running']);
    expect(reads).toEqual([]);
  });

  it('reinstates a lapsed run for its verdict and announces it once, with the verdict', async () => {
    const run = aRun({ status: 'failed', leaseLostAt: new Date(), startedAt: new Date(), lastBatchSeq: 2 });
    const { service, calls, emitted, statuses } = lifecycle([run]);
    expect(await service.finish(run.id, run.agentId!, finished(run.id, { lastSeq: 2 }))).toEqual({
      ok: true,
    });
    expect(calls).toEqual(['reinstate 1', 'finish succeeded']);
    expect(emitted).toEqual(['run.status', 'run.result', 'run.finished']);
    expect(statuses).toEqual(['succeeded']);
  });

  it("never reinstates another agent's lapsed run for a verdict", async () => {
    const run = aRun({ status: 'failed', leaseLostAt: new Date(), startedAt: new Date(), lastBatchSeq: 2 });
    const { service, calls, emitted } = lifecycle([run]);
    expect(await service.finish(run.id, randomUUID(), finished(run.id, { lastSeq: 2 }))).toEqual({
      ok: true,
    });
    expect(calls).toEqual([]);
    expect(emitted).toEqual([]);
  });
});

describe('verdictOf', () => {
  const now = new Date();
  it('refunds failures that are ours (infra, harness) and not the candidate’s', () => {
    const run = aRun({ status: 'running', startedAt: now });
    const failed = (failureCode: RunVerdict['failureCode']) =>
      verdictOf(
        run,
        finished(run.id, { result: aResult({ status: 'failed', failureCode, score: null }) }),
        now,
      );
    expect(failed('infra_error')).toMatchObject({ status: 'failed', quotaRefunded: true });
    expect(failed(null)).toMatchObject({ failureCode: 'harness_error', quotaRefunded: true });
    expect(failed('candidate_error')).toMatchObject({ failureCode: 'candidate_error', quotaRefunded: false });
  });

  it('refunds a cancel only before the run started', () => {
    const early = aRun({ status: 'assigned' });
    const late = aRun({ status: 'running', startedAt: now });
    expect(verdictOf(early, finished(early.id, { canceled: true }), now)).toMatchObject({
      status: 'canceled',
      quotaRefunded: true,
    });
    expect(verdictOf(late, finished(late.id, { canceled: true }), now)).toMatchObject({
      status: 'canceled',
      quotaRefunded: false,
    });
  });

  it('fails a baseline re-measure whose figures could not be cached (harness_error, refunded)', () => {
    const workloads = [{ name: 'w', batchSize: 1, promptLength: 8, maxNewTokens: 4, seed: 1 }];
    const run = aRun({
      mode: 'baseline',
      hardware: 'cpu',
      submissionId: null,
      teamId: null,
      status: 'running',
      startedAt: now,
      spec: { kind: 'decode', workloads } as unknown as RunEntity['spec'],
    });
    const fig = { totalMs: 10, ttftMs: 1, tpotMs: 1 };
    const verdict = (baseline: HarnessResultEvent['baseline']) =>
      verdictOf(run, finished(run.id, { result: aResult({ score: null, baseline }) }), now);
    expect(verdict({ hardware: 'cpu: AMD EPYC', samples: 10, workloads: { w: fig } })).toMatchObject({
      status: 'succeeded',
      failureCode: null,
    });
    for (const [baseline, why] of [
      [undefined, /no baseline figures/],
      [{ hardware: 'cpu', samples: 9, workloads: { w: fig } }, /fewer than 10/],
      [{ hardware: 'NVIDIA H200', samples: 10, workloads: { w: fig } }, /not on cpu/],
      [{ hardware: 'cpu', samples: 10, workloads: {} }, /no figures for w/],
    ] as const)
      expect(verdict(baseline)).toMatchObject({
        status: 'failed',
        failureCode: 'harness_error',
        score: null,
        quotaRefunded: true,
        message: expect.stringMatching(why),
      });
  });

  describe('the whole-run time limit: canceled with the limit in force named, not failed · timeout', () => {
    const atDeadline = () =>
      aRun({
        status: 'running',
        startedAt: new Date(now.getTime() - 60_000),
        deadlineAt: new Date(now.getTime() - 500),
        runTimeLimitSeconds: 90,
      });
    const explained = {
      status: 'canceled',
      failureCode: null,
      score: null,
      message: "Canceled: the run exceeded the organizer's whole-run time limit of 90 s.",
      cancelReason: 'whole-run time limit (90 s) exceeded',
      // Started, so it counts against the daily limit like any cancel after the start.
      quotaRefunded: false,
    };

    it('an agent that says it stopped the run at the limit (canceled, run_time_limit)', () => {
      const run = atDeadline();
      const v = verdictOf(
        run,
        finished(run.id, {
          canceled: true,
          cancelReason: 'run_time_limit',
          result: aResult({
            status: 'failed',
            failureCode: null,
            score: null,
            message: 'Canceled: stopped.',
          }),
        }),
        now,
      );
      expect(v).toMatchObject(explained);
      // The very words of the hub's own deadline sweep.
      expect(v.message).toBe(wholeRunLimitMessage(90));
      expect(v.cancelReason).toBe(wholeRunLimitCancelReason(90));
    });

    it('an older agent that reports a timeout at the deadline is read the same way', () => {
      const run = atDeadline();
      const v = verdictOf(
        run,
        finished(run.id, {
          result: aResult({ status: 'failed', failureCode: 'timeout', message: 'Timed out.', score: null }),
        }),
        now,
      );
      expect(v).toMatchObject(explained);
    });

    it('a run the limit stopped before it started (preparing) is refunded, as every early cancel is', () => {
      const run = aRun({
        status: 'assigned',
        deadlineAt: new Date(now.getTime() - 500),
        runTimeLimitSeconds: 90,
      });
      const v = verdictOf(run, finished(run.id, { canceled: true, cancelReason: 'run_time_limit' }), now);
      expect(v).toMatchObject({ ...explained, quotaRefunded: true });
    });

    it('a per-sample timeout well before the deadline stays failed · timeout with its own message', () => {
      const run = aRun({
        status: 'running',
        startedAt: now,
        deadlineAt: new Date(now.getTime() + 60_000),
        runTimeLimitSeconds: 90,
      });
      const v = verdictOf(
        run,
        finished(run.id, {
          result: aResult({ status: 'failed', failureCode: 'timeout', message: 'generate took too long' }),
        }),
        now,
      );
      expect(v).toMatchObject({
        status: 'failed',
        failureCode: 'timeout',
        message: 'generate took too long',
        cancelReason: null,
        quotaRefunded: false,
      });
    });

    it('a member’s cancel the agent reports keeps its own words and no whole-run reason', () => {
      const run = atDeadline();
      const v = verdictOf(
        run,
        finished(run.id, {
          canceled: true,
          result: aResult({ status: 'failed', message: 'Canceled: by alice' }),
        }),
        now,
      );
      expect(v).toMatchObject({ status: 'canceled', message: 'Canceled: by alice', cancelReason: null });
    });

    it('the sweeper’s cancel (no agent report) uses the same words and reason', async () => {
      const run = atDeadline();
      const { service } = lifecycle([run]);
      const cancels: { message: string; reason: string }[] = [];
      service.cancelRun = async (_id: string, message: string, reason: string) => {
        cancels.push({ message, reason });
        return { run: {} as never, changed: true, message: 'Run canceled.' };
      };
      expect(await service.failForDeadline(run.id)).toBe(true);
      expect(cancels).toEqual([{ message: explained.message, reason: explained.cancelReason }]);
    });
  });
});

describe('RunLifecycleService: reconciliation with a (re)connected agent', () => {
  it('keeps what the agent still holds, requeues the unstarted runs it lost and fails the started ones', async () => {
    const agentId = randomUUID();
    const deadlineAt = new Date(Date.now() + 60_000);
    const kept = aRun({ agentId, status: 'running', lastBatchSeq: 4, startedAt: new Date(), deadlineAt });
    const unstarted = aRun({ agentId, status: 'assigned' });
    const started = aRun({ agentId, status: 'running', startedAt: new Date() });
    const { service, calls } = lifecycle([kept, unstarted, started]);
    const runs = await service.reconcile(agentId, [kept.id, 'not-a-uuid']);
    expect(runs).toEqual([
      { runId: kept.id, ackedSeq: 4, keep: true, deadlineAt: deadlineAt.getTime() },
      { runId: 'not-a-uuid', ackedSeq: 0, keep: false, deadlineAt: null },
    ]);
    expect(calls).toEqual([
      'reinstate 1',
      `renew ${kept.id}`,
      `requeue ${unstarted.id}`,
      `fail ${started.id} lapsed=false`,
    ]);
  });

  it("answers a kept run with its deadline as it is now (the organizer's lowered limit), a dropped one with none", async () => {
    const agentId = randomUUID();
    const lowered = new Date(Date.now() + 5_000);
    const kept = aRun({ agentId, status: 'running', startedAt: new Date(), deadlineAt: lowered });
    const ended = aRun({ agentId, status: 'canceled', deadlineAt: new Date(Date.now() + 90_000) });
    const theirs = aRun({ status: 'running', deadlineAt: new Date(Date.now() + 90_000) });
    const { service } = lifecycle([kept, ended, theirs]);
    const runs = await service.reconcile(agentId, [kept.id, ended.id, theirs.id]);
    expect(runs.map((r) => [r.keep, r.deadlineAt])).toEqual([
      [true, lowered.getTime()],
      [false, null],
      [false, null],
    ]);
  });

  it('a heartbeat renews the runs the agent names and tells it to stop the ones no longer its own', async () => {
    const agentId = randomUUID();
    const mine = aRun({ agentId, status: 'running' });
    const canceled = aRun({ agentId, status: 'canceled' });
    const theirs = aRun({ status: 'running' });
    const { service, calls } = lifecycle([mine, canceled, theirs]);
    const stop = await service.heartbeat(agentId, [mine.id, canceled.id, theirs.id, 'junk']);
    expect(stop).toEqual([canceled.id, theirs.id, 'junk']);
    expect(calls).toEqual(['reinstate 3', `renew ${mine.id},${canceled.id},${theirs.id}`]);
  });

  it('a heartbeat reinstates a lapsed run of its agent and announces it running', async () => {
    const agentId = randomUUID();
    const lapsed = aRun({ agentId, status: 'failed', leaseLostAt: new Date(), startedAt: new Date() });
    const { service, emitted, statuses } = lifecycle([lapsed]);
    expect(await service.heartbeat(agentId, [lapsed.id])).toEqual([]);
    expect(emitted).toEqual(['run.status']);
    expect(statuses).toEqual(['running']);
  });
});
