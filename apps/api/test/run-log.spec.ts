import { describe, expect, it } from 'vitest';
import { DEFAULT_LOG_LIMITS, headLines } from '@dryft/libs';
import type { BenchmarkDefinition, LogLimits, LogLine, RunBatch } from '@dryft/libs';
import { BenchmarkRegistry } from '../src/benchmarks/benchmark-registry';
import type { Clock } from '../src/common/clock';
import { chunkLines, logChunk, RunLog, type LogChunk, type RunHead } from '../src/runs/run-log';
import type { RunLogRepository } from '../src/runs/run-log.repository';
import type { RunEntity } from '../src/runs/run.entity';
import type { RunsRepository } from '../src/runs/runs.repository';
import { aRun } from './builders';

const SMALL: LogLimits = { maxLines: 100, maxBytes: 1024 * 1024, maxLineBytes: 256, tailLines: 10 };

/** RunLog over a recording stand-in for its statements: chunks kept in memory, per run. */
function runLog(runs: RunEntity[] = [], opts: { headBatch?: boolean } = {}) {
  const byId = new Map(runs.map((r) => [r.id, r]));
  const chunks = new Map<string, LogChunk[]>();
  const calls: string[] = [];
  const tx = { name: 'tx' };
  const store = {
    within(t: unknown) {
      calls.push(t === tx ? 'within tx' : 'within another transaction');
      return store;
    },
    insertChunk: async (runId: string, chunk: LogChunk) => {
      calls.push(`chunk ${chunk.firstSeq}-${chunk.lastSeq}`);
      chunks.set(runId, [...(chunks.get(runId) ?? []), chunk]);
    },
    recordHeadBatch: async (_was: RunHead, now: RunHead, chunk: LogChunk | null) => {
      calls.push(`head ${now.lastBatchSeq} ${chunk ? `${chunk.firstSeq}-${chunk.lastSeq}` : 'no lines'}`);
      return opts.headBatch ?? true;
    },
    clearTail: async (run: RunEntity) => void calls.push(`clear tail at ${run.lastLogSeq}`),
    chunksAfter: async (runId: string, after: number) =>
      (chunks.get(runId) ?? []).filter((c) => c.lastSeq > after).map((c) => c.lines),
  };
  const repo = {
    transaction: async <T>(work: (t: unknown) => Promise<T>) => {
      calls.push('transaction');
      return work(tx);
    },
  };
  // The locked read inside flushTail's own transaction.
  Object.assign(tx, { lock: async (id: string) => byId.get(id) ?? null, currentManager: () => tx });
  const small = { id: 'small-logs', logs: SMALL } as unknown as BenchmarkDefinition;
  const log = new RunLog(
    store as unknown as RunLogRepository,
    repo as unknown as RunsRepository,
    new BenchmarkRegistry([small]),
    { now: () => new Date(5_000) } as Clock,
  );
  return { log, calls, chunks, tx };
}

const lines = (from: number, n: number): LogLine[] =>
  Array.from({ length: n }, (_, i) => ({ seq: from + i, ts: 1, stream: 'out', text: `line ${from + i}` }));

const logBatch = (runId: string, seq: number, from: number, n: number): RunBatch => ({
  runId,
  seq,
  entries: lines(from, n).map((l) => ({ type: 'log', n: l.seq, ts: l.ts, stream: 'out', text: l.text })),
});

describe('RunLog: limits', () => {
  it("takes the benchmark definition's log cap, and the defaults for a benchmark without one", () => {
    const { log } = runLog();
    expect(log.limits('small-logs')).toEqual(SMALL);
    expect(log.limits('toy-decode')).toEqual(DEFAULT_LOG_LIMITS);
  });
});

describe('RunLog: the locked path', () => {
  it('stores the new lines of a batch in the caller’s transaction and advances the run', async () => {
    const run = aRun({ status: 'running', lastLogSeq: 2 });
    const { log, calls, tx } = runLog([run]);
    // Lines 1 and 2 were stored already (a resend): only 3-5 are new.
    const stored = await log.append(tx as never, run, lines(1, 5));
    expect(stored.map((l) => l.seq)).toEqual([3, 4, 5]);
    expect(run).toMatchObject({ lastLogSeq: 5, logLines: 3 });
    expect(calls).toEqual(['within tx', 'chunk 3-5']);
  });

  it('caps with the benchmark’s limits: past the head, lines wait in the tail and are not stored', async () => {
    const run = aRun({ status: 'running', benchmarkId: 'small-logs' });
    const { log, calls, tx } = runLog([run]);
    const stored = await log.append(tx as never, run, lines(1, 150));
    expect(stored).toHaveLength(headLines(SMALL));
    expect(run.lastLogSeq).toBe(headLines(SMALL));
    expect(run.logTail?.lines.length).toBeGreaterThan(0);
    expect(calls).toEqual(['within tx', `chunk 1-${headLines(SMALL)}`]);
  });

  it('stores nothing for a batch of resends only', async () => {
    const run = aRun({ status: 'running', lastLogSeq: 9 });
    const { log, calls, tx } = runLog([run]);
    expect(await log.append(tx as never, run, lines(1, 9))).toEqual([]);
    expect(calls).toEqual([]);
    expect(run.lastLogSeq).toBe(9);
  });
});

describe('RunLog: the end of a capped log', () => {
  it('stores nothing when the log never went past its head', async () => {
    const run = aRun({ status: 'running', lastLogSeq: 4 });
    const { log, calls, tx } = runLog([run]);
    expect(await log.storeEnd(tx as never, run)).toEqual([]);
    expect(calls).toEqual([]);
  });

  it('stores the notice and the kept tail after the last stored line, and clears the tail, in the transaction', async () => {
    const run = aRun({ status: 'running', benchmarkId: 'small-logs' });
    const { log, calls, tx } = runLog([run]);
    await log.append(tx as never, run, lines(1, 500));
    calls.length = 0;
    const head = run.lastLogSeq;
    const end = await log.storeEnd(tx as never, run);
    expect(end[0]).toMatchObject({ seq: head + 1, stream: 'system', ts: 1 });
    expect(end.slice(1).map((l) => l.text)).toEqual(lines(491, 10).map((l) => l.text));
    expect(run.logTail).toBeNull();
    expect(run.lastLogSeq).toBe(head + end.length);
    expect(calls).toEqual([
      'within tx',
      `chunk ${head + 1}-${head + end.length}`,
      'within tx',
      `clear tail at ${head + end.length}`,
    ]);
  });

  it('flushes a run’s tail in its own transaction, and nothing for a run that is gone', async () => {
    const run = aRun({ status: 'running', benchmarkId: 'small-logs' });
    const { log, calls, tx } = runLog([run]);
    await log.append(tx as never, run, lines(1, 200));
    calls.length = 0;
    expect((await log.flushTail(run.id)).length).toBe(11);
    expect(calls[0]).toBe('transaction');
    calls.length = 0;
    expect(await log.flushTail(run.id)).toEqual([]); // the tail is stored once
    expect(await log.flushTail('gone')).toEqual([]);
    expect(calls).toEqual(['transaction', 'transaction']);
  });
});

describe('RunLog: reading pages', () => {
  it('reads the lines past `after`, at most `limit`, across chunks', async () => {
    const run = aRun({ status: 'running' });
    const { log } = runLog([run]);
    await log.insert(run.id, lines(1, 4), 0);
    await log.insert(run.id, lines(5, 4), 4);
    expect((await log.read(run.id, 2, 3)).map((l) => l.seq)).toEqual([3, 4, 5]);
    expect((await log.read(run.id, 6, 10)).map((l) => l.seq)).toEqual([7, 8]);
    expect(await log.read(run.id, 8, 10)).toEqual([]);
  });

  it('says a page is complete only once the run ended and its last line was read', async () => {
    const running = aRun({ status: 'running', lastLogSeq: 3 });
    const done = aRun({ status: 'succeeded', lastLogSeq: 3 });
    const { log } = runLog([running, done]);
    for (const r of [running, done]) await log.insert(r.id, lines(1, 3), 0);
    expect(await log.page(running, 0, 10)).toMatchObject({ nextAfter: 3, complete: false });
    expect(await log.page(done, 0, 2)).toMatchObject({ nextAfter: 2, complete: false });
    expect(await log.page(done, 2, 2)).toMatchObject({ nextAfter: 3, complete: true });
    // Nothing past `after`: the same `after` comes back.
    expect(await log.page(done, 3, 2)).toEqual({ items: [], nextAfter: 3, complete: true });
  });

  it('stores what a chunk holds as JSON the reader reads back', () => {
    const chunk = logChunk(lines(7, 2));
    expect(chunk).toMatchObject({ firstSeq: 7, lastSeq: 8, lineCount: 2 });
    expect(chunkLines(chunk.lines)).toEqual(lines(7, 2));
  });
});

describe('RunLog: the head, in one statement', () => {
  const runningHead = (run: RunEntity, log: RunLog) => {
    run.status = 'running';
    log.rememberHead(run.id, run);
  };

  it('stores the next log-only batch of the run it remembers, and remembers the new figures', async () => {
    const run = aRun({ lastBatchSeq: 1, lastLogSeq: 2, logLines: 2, logBytes: '12' });
    const { log, calls } = runLog([run]);
    runningHead(run, log);
    expect(await log.storeInHead(run.id, run.agentId!, logBatch(run.id, 2, 3, 2))).toEqual({
      ackedSeq: 2,
      lines: lines(3, 2),
    });
    expect(calls).toEqual(['head 2 3-4']);
    expect(log.heads.get(run.id)).toMatchObject({
      lastBatchSeq: 2,
      lastLogSeq: 4,
      logLines: 4,
      logBytes: '24',
    });
  });

  it('leaves to the locked path: an unknown run, another agent, a gap, a harness event, a full head', async () => {
    const run = aRun({ lastBatchSeq: 1, lastLogSeq: 2, logLines: 2 });
    const { log, calls } = runLog([run]);
    expect(await log.storeInHead(run.id, run.agentId!, logBatch(run.id, 2, 3, 1))).toBeNull();
    runningHead(run, log);
    expect(await log.storeInHead(run.id, 'another agent', logBatch(run.id, 2, 3, 1))).toBeNull();
    expect(await log.storeInHead(run.id, run.agentId!, logBatch(run.id, 3, 3, 1))).toBeNull();
    const withEvent = logBatch(run.id, 2, 3, 1);
    withEvent.entries.push({
      type: 'event',
      ts: 1,
      event: { type: 'log', level: 'info', message: 'x' },
    } as never);
    expect(await log.storeInHead(run.id, run.agentId!, withEvent)).toBeNull();
    log.heads.remember({ ...log.heads.get(run.id)!, logLines: headLines(DEFAULT_LOG_LIMITS) });
    expect(await log.storeInHead(run.id, run.agentId!, logBatch(run.id, 2, 3, 1))).toBeNull();
    expect(calls).toEqual([]);
  });

  it('forgets the run when its row moved on (the statement stored nothing)', async () => {
    const run = aRun({ lastBatchSeq: 1, lastLogSeq: 2, logLines: 2 });
    const { log, calls } = runLog([run], { headBatch: false });
    runningHead(run, log);
    expect(await log.storeInHead(run.id, run.agentId!, logBatch(run.id, 2, 3, 1))).toBeNull();
    expect(calls).toEqual(['head 2 3-3']);
    expect(log.heads.get(run.id)).toBeUndefined();
  });

  it('remembers only a running run within its head, and forgets it on request', () => {
    const { log } = runLog();
    const run = aRun({ status: 'running' });
    log.rememberHead(run.id, run);
    expect(log.heads.size).toBe(1);
    log.forgetHead(run.id);
    expect(log.heads.size).toBe(0);
    for (const other of [aRun({ status: 'assigned' }), aRun({ status: 'running', logTail: {} as never })]) {
      log.rememberHead(other.id, other);
      expect(log.heads.get(other.id)).toBeUndefined();
    }
    log.rememberHead('gone', undefined);
    expect(log.heads.size).toBe(0);
  });
});
