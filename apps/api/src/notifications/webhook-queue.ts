import type { JobQueue } from '../common/jobs';
import type { Config } from '../config/config';

export interface WebhookJob {
  deliveryId: string;
}

/**
 * Outgoing team webhook deliveries: a failed attempt is retried by pg-boss with exponential backoff
 * until OUTGOING_WEBHOOK_ATTEMPTS attempts were made.
 */
export function webhookQueue(config: Config): JobQueue<WebhookJob> {
  return {
    name: 'team-webhook-delivery',
    retryLimit: config.OUTGOING_WEBHOOK_ATTEMPTS - 1,
    retryDelaySeconds: config.OUTGOING_WEBHOOK_RETRY_SECONDS,
    expireInSeconds: 5 * 60,
  };
}
