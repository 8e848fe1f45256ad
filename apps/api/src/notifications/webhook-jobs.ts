import { Inject, Injectable, Logger, OnApplicationShutdown } from '@nestjs/common';
import PgBoss from 'pg-boss';
import { DataSource, EntityManager } from 'typeorm';
import { CONFIG, Config } from '../config/config';
import { transactionDb } from '../common/pg-boss-tx';

export const WEBHOOK_QUEUE = 'team-webhook-delivery';

export interface WebhookJob {
  deliveryId: string;
}

/**
 * pg-boss on the hub's own database for outgoing webhooks: a delivery's job is inserted in the same
 * transaction as the delivery row, and a failed attempt is retried by pg-boss with exponential
 * backoff. Started on first use (a hub without webhooks never starts it) and at boot when any
 * webhook exists, so retries continue after a restart.
 */
@Injectable()
export class WebhookJobs implements OnApplicationShutdown {
  private readonly logger = new Logger('WebhookJobs');
  private boss?: PgBoss;
  private workerId?: string;
  private starting?: Promise<void>;
  private stopped = false;

  constructor(
    private readonly dataSource: DataSource,
    @Inject(CONFIG) private readonly config: Config,
  ) {}

  start(handle: (job: PgBoss.JobWithMetadata<WebhookJob>) => Promise<void>): Promise<void> {
    this.starting ??= this.doStart(handle).catch((err: Error) => {
      this.starting = undefined;
      throw err;
    });
    return this.starting;
  }

  private async doStart(handle: (job: PgBoss.JobWithMetadata<WebhookJob>) => Promise<void>): Promise<void> {
    const url = (this.dataSource.options as { url?: string }).url;
    const boss = new PgBoss({
      connectionString: url,
      schema: 'pgboss',
      max: 2,
      application_name: 'dryft-webhooks',
      schedule: false,
    });
    boss.on('error', (err) => this.logger.error(`pg-boss: ${err.message}`));
    await boss.start();
    await boss.createQueue(WEBHOOK_QUEUE, {
      name: WEBHOOK_QUEUE,
      retryLimit: this.config.OUTGOING_WEBHOOK_ATTEMPTS - 1,
      retryDelay: this.config.OUTGOING_WEBHOOK_RETRY_SECONDS,
      retryBackoff: true,
      expireInSeconds: 5 * 60,
    });
    if (this.stopped) {
      await boss.stop({ graceful: false, wait: true }).catch(() => undefined);
      return;
    }
    this.workerId = await boss.work<WebhookJob>(
      WEBHOOK_QUEUE,
      { pollingIntervalSeconds: 0.5, batchSize: 1, includeMetadata: true },
      async (jobs) => {
        for (const job of jobs) await handle(job);
      },
    );
    this.boss = boss;
  }

  /** Inserts the job inside the caller's transaction: committed with the delivery row, or not at all. */
  async enqueue(manager: EntityManager, deliveryId: string): Promise<void> {
    await this.starting;
    if (!this.boss) throw new Error('webhook jobs are not started');
    const db = transactionDb(manager);
    await this.boss.send(WEBHOOK_QUEUE, { deliveryId } satisfies WebhookJob, { db });
  }

  wake(): void {
    if (this.boss && this.workerId) this.boss.notifyWorker(this.workerId);
  }

  async onApplicationShutdown(): Promise<void> {
    this.stopped = true;
    await this.starting?.catch(() => undefined);
    const boss = this.boss;
    this.boss = undefined;
    if (boss)
      await boss
        .stop({ graceful: true, wait: true, timeout: 5000 })
        .catch((err: Error) => this.logger.warn(`pg-boss stop: ${err.message}`));
  }
}
