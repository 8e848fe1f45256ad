import { randomUUID } from 'node:crypto';
import type { LogLine } from '@dryft/libs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DataSource } from 'typeorm';
import { BenchmarkRegistry } from '../../apps/api/src/benchmarks/benchmark-registry';
import { Clock } from '../../apps/api/src/common/clock';
import { RunLog } from '../../apps/api/src/runs/run-log';
import { RunLogRepository } from '../../apps/api/src/runs/run-log.repository';
import { RunsRepository } from '../../apps/api/src/runs/runs.repository';
import { openMigratedDatabase } from '../support/db';

/** A run's log stored as chunks of every size, read back by `RunLog.read` from every point, at every page size. */
describe('a run log stored as chunks, read a page at a time', () => {
  let ds: DataSource;
  let close: () => Promise<void>;
  let log: RunLog;
  const runId = randomUUID();
  const stored: LogLine[] = [];
  const SIZES = [1, 40, 3, 1, 1, 17, 40, 2, 25, 1, 9];

  beforeAll(async () => {
    ({ ds, close } = await openMigratedDatabase());
    log = new RunLog(
      new RunLogRepository(ds),
      new RunsRepository(ds),
      new BenchmarkRegistry([]),
      new Clock(),
    );
    // Chunks of 1 to 40 lines, seqs with gaps (the cap drops lines; harness events take numbers too).
    let seq = 0;
    for (const size of SIZES) {
      const lines: LogLine[] = Array.from({ length: size }, () => {
        seq += seq % 7 === 3 ? 3 : 1;
        return { seq, ts: 1_764_500_000_000 + seq, stream: 'out', text: `line ${seq}` };
      });
      await log.insert(runId, lines, stored.length ? stored[stored.length - 1].seq : 0);
      stored.push(...lines);
    }
    // A resend of a stored batch, and lines at or below the last stored seq: nothing more is stored.
    await log.insert(runId, stored.slice(-9), stored[stored.length - 10].seq);
    await log.insert(runId, stored.slice(5, 8), stored[stored.length - 1].seq);
  });

  afterAll(async () => {
    await close?.();
  });

  it('answers exactly the next `limit` stored lines after any seq', async () => {
    const last = stored[stored.length - 1].seq;
    for (let after = 0; after <= last + 1; after += 1)
      for (const limit of [1, 2, 5, 39, 41, 1_000]) {
        const want = stored.filter((l) => l.seq > after).slice(0, limit);
        expect(await log.read(runId, after, limit), `after ${after}, limit ${limit}`).toEqual(want);
      }
  });

  it('pages through the whole log, every line once and in order', async () => {
    for (const limit of [1, 7, 40]) {
      const got: LogLine[] = [];
      let after = 0;
      for (;;) {
        const page = await log.read(runId, after, limit);
        if (page.length === 0) break;
        expect(page.length).toBeLessThanOrEqual(limit);
        got.push(...page);
        after = page[page.length - 1].seq;
      }
      expect(got).toEqual(stored);
    }
  });

  it('reads at most one chunk more than the page needs (seqs without gaps, as an agent numbers lines)', async () => {
    const run = randomUUID();
    const lines: LogLine[] = [];
    const chunkOfLine = new Map<number, number>();
    for (const [chunk, size] of SIZES.entries()) {
      const batch = Array.from({ length: size }, (_, i) => {
        const seq = lines.length + i + 1;
        chunkOfLine.set(seq, chunk);
        return { seq, ts: seq, stream: 'out' as const, text: `line ${seq}` };
      });
      await log.insert(run, batch, lines.length);
      lines.push(...batch);
    }
    const reads: number[] = [];
    const needed: number[] = [];
    const query = ds.manager.query.bind(ds.manager);
    ds.manager.query = async (sql: string, params?: unknown[]) => {
      const rows = await query(sql, params);
      if (sql.includes('run_log_chunks')) reads.push((rows as unknown[]).length);
      return rows;
    };
    try {
      for (let after = 0; after <= lines.length; after++)
        for (const limit of [1, 22, 40, 90]) {
          const page = await log.read(run, after, limit);
          expect(page).toEqual(lines.slice(after, after + limit));
          needed.push(new Set(page.map((l) => chunkOfLine.get(l.seq))).size);
        }
    } finally {
      ds.manager.query = query;
    }
    reads.forEach((n, i) => expect(n - needed[i], `page ${i}`).toBeLessThanOrEqual(1));
    // From the first line on (the first chunk is one line), a page of 40 is the 40-line chunk alone.
    expect(reads[6]).toBe(1);
  });
});
