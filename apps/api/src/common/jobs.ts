import { Injectable, Logger, OnApplicationShutdown } from '@nestjs/common';
import PgBoss from 'pg-boss';
import { DataSource, EntityManager } from 'typeorm';

/**
 * A queue of the hub's background jobs: its pg-boss name and how a failed job is retried. Each
 * domain declares its own (GitHub deliveries, outgoing team webhooks); `T` is the job's data.
 */
export interface JobQueue<T extends object> {
  readonly name: string;
  /** Retries with backoff after a handler throws; a job whose worker died expires and is retried. */
  readonly retryLimit: number;
  readonly retryDelaySeconds: number;
  readonly expireInSeconds: number;
  /** Never read: ties the queue to its job data so `work` and `enqueue` agree on it. */
  readonly _job?: T;
}

/** A job as its handler receives it: its data, and how many attempts were made and are allowed. */
export type Job<T extends object> = PgBoss.JobWithMetadata<T>;

export type JobHandler<T extends object> = (job: Job<T>) => Promise<void>;

/**
 * The hub's one pg-boss, on its own database (schema `pgboss`, one pool), for every queue. A job is
 * inserted in the same transaction as the row it belongs to (through that transaction's
 * connection), so a crash never leaves a row that no job will pick up. pg-boss starts with the
 * first queue worked on: a hub with neither the GitHub App nor a team webhook never starts it.
 */
@Injectable()
export class Jobs implements OnApplicationShutdown {
  private readonly logger = new Logger('Jobs');
  private boss?: PgBoss;
  private starting?: Promise<PgBoss>;
  /** A queue's worker id once `work` was called for it (and its start went through). */
  private readonly workers = new Map<string, Promise<string>>();
  private stopped = false;

  constructor(private readonly dataSource: DataSource) {}

  /**
   * Creates the queue and works it in this process, one job at a time; `handle` throws only for a
   * job that should be retried. Called again for the same queue, it returns the first call's start.
   */
  work<T extends object>(queue: JobQueue<T>, handle: JobHandler<T>): Promise<void> {
    let worker = this.workers.get(queue.name);
    if (!worker) {
      worker = this.startWorker(queue, handle);
      this.workers.set(queue.name, worker);
      // A start that failed (the database away) is tried again at the next call.
      worker.catch(() => this.workers.delete(queue.name));
    }
    return worker.then(() => undefined);
  }

  /**
   * Inserts the job inside the caller's transaction: committed with its row, or not at all. With
   * `startAfterSeconds`, no worker takes it before then (a delivery waiting for a free checker).
   */
  async enqueue<T extends object>(
    manager: EntityManager,
    queue: JobQueue<T>,
    data: T,
    opts: { startAfterSeconds?: number } = {},
  ): Promise<void> {
    const worker = this.workers.get(queue.name);
    if (!worker) throw new Error(`the ${queue.name} queue is not started (call work first)`);
    await worker;
    if (!this.boss) throw new Error(`the ${queue.name} queue is stopped`);
    await this.boss.send(queue.name, data, {
      db: transactionDb(manager),
      ...(opts.startAfterSeconds !== undefined ? { startAfter: opts.startAfterSeconds } : {}),
    });
  }

  /** After the transaction committed: wake the queue's worker now instead of at its next poll. */
  wake(queue: JobQueue<object>): void {
    void this.workers
      .get(queue.name)
      ?.then((id) => this.boss?.notifyWorker(id))
      .catch(() => undefined);
  }

  async onApplicationShutdown(): Promise<void> {
    this.stopped = true;
    await Promise.allSettled([this.starting, ...this.workers.values()]);
    const boss = this.boss;
    this.boss = undefined;
    if (boss)
      await boss
        .stop({ graceful: true, wait: true, timeout: 5000 })
        .catch((err: Error) => this.logger.warn(`pg-boss stop: ${err.message}`));
  }

  private async startWorker<T extends object>(queue: JobQueue<T>, handle: JobHandler<T>): Promise<string> {
    const boss = await this.start();
    await boss.createQueue(queue.name, {
      name: queue.name,
      retryLimit: queue.retryLimit,
      retryDelay: queue.retryDelaySeconds,
      retryBackoff: true,
      expireInSeconds: queue.expireInSeconds,
    });
    if (this.stopped) throw new Error(`the hub is stopping; the ${queue.name} queue was not worked`);
    return boss.work<T>(
      queue.name,
      { pollingIntervalSeconds: 0.5, batchSize: 1, includeMetadata: true },
      async (jobs) => {
        for (const job of jobs) await handle(job);
      },
    );
  }

  private start(): Promise<PgBoss> {
    this.starting ??= this.startBoss().catch((err: Error) => {
      this.starting = undefined;
      throw err;
    });
    return this.starting;
  }

  private async startBoss(): Promise<PgBoss> {
    const url = (this.dataSource.options as { url?: string }).url;
    const boss = new PgBoss({
      connectionString: url,
      schema: 'pgboss',
      // Polling, maintenance and monitoring of every queue; jobs are sent on the caller's transaction.
      max: 4,
      application_name: 'dryft-jobs',
      // No cron schedules here; the hub's own sweeper owns run deadlines.
      schedule: false,
    });
    boss.on('error', (err) => this.logger.error(`pg-boss: ${err.message}`));
    await boss.start();
    if (this.stopped) {
      await boss.stop({ graceful: false, wait: true }).catch(() => undefined);
      throw new Error('the hub is stopping; pg-boss was not started');
    }
    this.boss = boss;
    return boss;
  }
}

/**
 * pg-boss's `db` option bound to the caller's TypeORM transaction: a job sent through it commits with
 * the row it belongs to, or not at all.
 */
export function transactionDb(manager: EntityManager): PgBoss.Db {
  const runner = manager.queryRunner;
  if (!runner) throw new Error('enqueue needs a transaction');
  return {
    executeSql: async (text, values) => {
      const result = await runner.query(text, values, true);
      return { rows: result.records as unknown[] };
    },
  };
}
