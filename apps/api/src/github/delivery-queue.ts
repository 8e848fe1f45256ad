import type { JobQueue } from '../common/jobs';

export interface DeliveryJob {
  deliveryId: string;
  /** Times the delivery was already queued again because every upload checker was busy. */
  busyRetries?: number;
}

/**
 * GitHub deliveries waiting to be processed (DeliveryProcessor). A job that throws (a surprise, not
 * a recorded failure) is retried with backoff; a job whose worker died expires after 15 minutes and
 * is retried.
 */
export const DELIVERY_QUEUE: JobQueue<DeliveryJob> = {
  name: 'github-delivery',
  retryLimit: 3,
  retryDelaySeconds: 5,
  expireInSeconds: 15 * 60,
};
