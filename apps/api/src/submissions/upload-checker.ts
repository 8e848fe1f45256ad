import { Inject, Injectable, Logger, OnModuleDestroy } from '@nestjs/common';
import type { Validation } from '@dryft/libs';
import { AppError, unavailableRetry } from '../common/errors';
import { CONFIG, Config } from '../config/config';
import { CheckCrashed, CheckerBusy, CheckPool, CheckTimeout } from './check-pool';

/** After a checker thread failed: a fresh one is up by then. */
const CRASH_RETRY_SECONDS = 5;

/**
 * The API's upload checker: the shared rules on a bounded pool of worker threads (UPLOAD_CHECK_*
 * settings). A pool that cannot take an upload, or a check past its budget, answers 503 with
 * Retry-After before anything is stored.
 */
@Injectable()
export class UploadChecker implements OnModuleDestroy {
  private readonly logger = new Logger('UploadChecker');
  private readonly pool: CheckPool;

  constructor(@Inject(CONFIG) private readonly config: Config) {
    this.pool = new CheckPool({
      workers: config.UPLOAD_CHECK_WORKERS,
      queue: config.UPLOAD_CHECK_QUEUE,
      timeoutMs: config.UPLOAD_CHECK_TIMEOUT_SECONDS * 1000,
    });
  }

  checkArchive(bytes: Uint8Array): Promise<Validation> {
    return this.refusing(this.pool.checkArchive(bytes));
  }

  checkFile(filename: string, bytes: Uint8Array): Promise<Validation> {
    return this.refusing(this.pool.checkFile(filename, bytes));
  }

  onModuleDestroy(): Promise<void> {
    return this.pool.close();
  }

  private async refusing(check: Promise<Validation>): Promise<Validation> {
    try {
      return await check;
    } catch (err) {
      throw this.refusal(err as Error);
    }
  }

  private refusal(err: Error): AppError {
    const budget = this.config.UPLOAD_CHECK_TIMEOUT_SECONDS;
    if (err instanceof CheckerBusy) {
      return unavailableRetry(
        'checker_busy',
        `Every upload checker of this hub is busy and ${err.waiting} uploads are waiting, so nothing was stored. Send it again in ${err.retryAfterSeconds} s (Retry-After).`,
        err.retryAfterSeconds,
      );
    }
    if (err instanceof CheckTimeout) {
      this.logger.warn(
        err.checking
          ? `an upload check ran past its ${budget} s budget (after ${Math.round(err.waitedMs / 1000)} s waiting); its thread was replaced`
          : `an upload waited ${budget} s for a free checker`,
      );
      return unavailableRetry(
        'checker_busy',
        err.checking
          ? `Checking this upload did not finish within ${budget} s (the hub's budget per upload), so nothing was stored. Send it again in ${err.retryAfterSeconds} s; if it is refused again, make its Python smaller.`
          : `No upload checker was free within ${budget} s, so nothing was stored. Send it again in ${err.retryAfterSeconds} s (Retry-After).`,
        err.retryAfterSeconds,
      );
    }
    if (err instanceof CheckCrashed) {
      this.logger.warn(`an upload check failed: ${err.message}`);
      return unavailableRetry(
        'checker_busy',
        `The upload could not be checked (${err.message}), so nothing was stored. Send it again in ${CRASH_RETRY_SECONDS} s (Retry-After); if it fails again, make the archive smaller.`,
        CRASH_RETRY_SECONDS,
      );
    }
    return err as AppError;
  }
}
