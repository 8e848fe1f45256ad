import { describe, expect, it } from 'vitest';
import type { DataSource } from 'typeorm';
import { Jobs, type Job, type JobQueue } from '../../apps/api/src/common/jobs';
import { migratedDatabases } from '../support/db';

const FIRST: JobQueue<{ n: number }> = {
  name: 'test-first',
  retryLimit: 0,
  retryDelaySeconds: 1,
  expireInSeconds: 60,
};
const SECOND: JobQueue<{ s: string }> = {
  name: 'test-second',
  retryLimit: 0,
  retryDelaySeconds: 1,
  expireInSeconds: 60,
};

/** Resolves with the first job handed to it. */
function oneJob<T extends object>(): { handle: (job: Job<T>) => Promise<void>; received: Promise<Job<T>> } {
  let resolve!: (job: Job<T>) => void;
  const received = new Promise<Job<T>>((r) => (resolve = r));
  return { handle: async (job) => resolve(job), received };
}

async function jobsConnections(ds: DataSource): Promise<{ application_name: string }[]> {
  return ds.query(
    `SELECT application_name FROM pg_stat_activity
      WHERE datname = current_database() AND application_name LIKE 'dryft-%'`,
  );
}

describe('Jobs: one pg-boss for every queue', () => {
  const database = migratedDatabases();

  it('works two queues on one pool and delivers each job, sent in its transaction, to its queue', async () => {
    const ds = await database();
    const jobs = new Jobs(ds);
    try {
      const first = oneJob<{ n: number }>();
      const second = oneJob<{ s: string }>();
      await jobs.work(FIRST, first.handle);
      await jobs.work(SECOND, second.handle);
      // A second call for a queue is the first call's start, not a second worker.
      await jobs.work(FIRST, async () => expect.fail('a second handler was registered'));

      await ds.transaction(async (manager) => {
        await jobs.enqueue(manager, FIRST, { n: 7 });
        await jobs.enqueue(manager, SECOND, { s: 'seven' });
      });
      jobs.wake(FIRST);
      jobs.wake(SECOND);
      expect((await first.received).data).toEqual({ n: 7 });
      expect((await second.received).data).toEqual({ s: 'seven' });

      const names = new Set((await jobsConnections(ds)).map((c) => c.application_name));
      expect([...names]).toEqual(['dryft-jobs']);
    } finally {
      await jobs.onApplicationShutdown();
    }
    // The pool is closed when stop resolves; Postgres drops a backend from pg_stat_activity only
    // once that process has exited, a moment later (seen under Node 24): wait for it, boundedly.
    await expect.poll(() => jobsConnections(ds), { timeout: 5_000, interval: 50 }).toEqual([]);
  });

  it('sends nothing when the transaction rolls back', async () => {
    const ds = await database();
    const jobs = new Jobs(ds);
    try {
      await jobs.work(FIRST, async () => undefined);
      await expect(
        ds.transaction(async (manager) => {
          await jobs.enqueue(manager, FIRST, { n: 1 });
          throw new Error('rolled back');
        }),
      ).rejects.toThrow('rolled back');
      const [{ count }] = await ds.query<{ count: string }[]>(
        `SELECT count(*) FROM pgboss.job WHERE name = $1`,
        [FIRST.name],
      );
      expect(Number(count)).toBe(0);
    } finally {
      await jobs.onApplicationShutdown();
    }
  });

  it('refuses a job for a queue nobody works in this process, and starts no pg-boss for it', async () => {
    const ds = await database();
    const jobs = new Jobs(ds);
    await expect(ds.transaction((manager) => jobs.enqueue(manager, SECOND, { s: 'x' }))).rejects.toThrow(
      'the test-second queue is not started (call work first)',
    );
    // Polled: the earlier tests' closed pools leave pg_stat_activity a moment after they close; a
    // pg-boss started here would stay.
    await expect.poll(() => jobsConnections(ds), { timeout: 5_000, interval: 50 }).toEqual([]);
    await jobs.onApplicationShutdown();
  });
});
