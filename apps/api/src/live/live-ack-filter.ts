import { Catch, Logger } from '@nestjs/common';
import { refusal } from '@dryft/libs';
import { databaseUnavailable, isDatabaseUnavailable } from '../common/database-errors';
import { AckExceptionFilter, type FailedEvent, MalformedPayload } from '../socket/socket-payloads';

/**
 * How `/live` answers a handler that threw: a payload its schema refused is `invalid_request` (with
 * the issues), the database being down is said as such, anything else is logged and answered
 * `internal_error`; always on the ack, never as an `exception` event.
 */
@Catch()
export class LiveAckFilter extends AckExceptionFilter {
  constructor(private readonly logger = new Logger('LiveGateway')) {
    super();
  }

  protected answer(err: unknown, { event }: FailedEvent) {
    if (err instanceof MalformedPayload) {
      this.logger.warn(`live client: malformed ${event}: ${err.message}`);
      return refusal('invalid_request', err.message);
    }
    if (isDatabaseUnavailable(err)) {
      const e = databaseUnavailable();
      return refusal(e.code, e.message);
    }
    this.logger.error(`live ${event} failed: ${(err as Error).stack ?? err}`);
    return refusal('internal_error', 'Something went wrong on the server; try again.');
  }
}
