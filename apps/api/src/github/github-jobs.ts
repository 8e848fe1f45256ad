import { Inject, Injectable, Logger, OnApplicationShutdown } from '@nestjs/common';
import PgBoss from 'pg-boss';
import { DataSource, EntityManager } from 'typeorm';
import { CONFIG, Config } from '../config/config';
import { missingGithubAppSettings } from './github-settings';
import { transactionDb } from '../common/pg-boss-tx';

export const DELIVERY_QUEUE = 'github-delivery';

export interface DeliveryJob {
  deliveryId: string;
}

/**
 * pg-boss on the hub's own database: a delivery's job is inserted in the same transaction as the
 * delivery row (through the transaction's connection), so a crash can never leave a delivery that
 * nobody will process. Started only when the GitHub App is configured.
 */
@Injectable()
export class GithubJobs implements OnApplicationShutdown {
  private readonly logger = new Logger('GithubJobs');
  private boss?: PgBoss;
  private workerId?: string;
  private starting?: Promise<void>;

  constructor(
    private readonly dataSource: DataSource,
    @Inject(CONFIG) private readonly config: Config,
  ) {}

  get enabled(): boolean {
    return missingGithubAppSettings(this.config).length === 0;
  }

  /** Starts pg-boss and the worker; `handle` processes one delivery (and throws only on surprises). */
  start(handle: (job: DeliveryJob) => Promise<void>): Promise<void> {
    this.starting ??= this.doStart(handle);
    return this.starting;
  }

  private async doStart(handle: (job: DeliveryJob) => Promise<void>): Promise<void> {
    const url = (this.dataSource.options as { url?: string }).url;
    const boss = new PgBoss({
      connectionString: url,
      schema: 'pgboss',
      max: 4,
      application_name: 'dryft-github-jobs',
      // No cron schedules here; the hub's own sweeper owns run deadlines.
      schedule: false,
    });
    boss.on('error', (err) => this.logger.error(`pg-boss: ${err.message}`));
    await boss.start();
    // A job that throws (a surprise, not a recorded failure) is retried with backoff; a job whose
    // worker died is expired and retried after 15 minutes.
    await boss.createQueue(DELIVERY_QUEUE, {
      name: DELIVERY_QUEUE,
      retryLimit: 3,
      retryDelay: 5,
      retryBackoff: true,
      expireInSeconds: 15 * 60,
    });
    this.workerId = await boss.work<DeliveryJob>(
      DELIVERY_QUEUE,
      { pollingIntervalSeconds: 0.5, batchSize: 1 },
      async (jobs) => {
        for (const job of jobs) await handle(job.data);
      },
    );
    this.boss = boss;
  }

  /** Inserts the job inside the caller's transaction: committed with the delivery row, or not at all. */
  async enqueue(manager: EntityManager, deliveryId: string): Promise<void> {
    await this.starting;
    if (!this.boss) throw new Error('GitHub jobs are not started');
    const db = transactionDb(manager);
    await this.boss.send(DELIVERY_QUEUE, { deliveryId } satisfies DeliveryJob, { db });
  }

  /** After the transaction committed: wake the worker now instead of at its next poll. */
  wake(): void {
    if (this.boss && this.workerId) this.boss.notifyWorker(this.workerId);
  }

  async onApplicationShutdown(): Promise<void> {
    const boss = this.boss;
    this.boss = undefined;
    if (boss)
      await boss
        .stop({ graceful: true, wait: true, timeout: 2000 })
        .catch((err: Error) => this.logger.warn(`pg-boss stop: ${err.message}`));
  }
}
