import { Catch, Logger } from '@nestjs/common';
import { agentRefusal, finalRefusal } from '@dryft/libs';
import { AppError } from '../common/errors';
import { isDatabaseUnavailable } from '../common/database-errors';
import { forRun, LogFields } from '../common/logging';
import { describeIssues } from '../socket/socket-handlers';
import { AckExceptionFilter, type FailedEvent, MalformedPayload } from '../socket/socket-payloads';

/**
 * How `/agents` answers a handler that threw, always on the ack: a malformed payload, or a 4xx
 * refusal (an id that names nothing), is final (resending the same message cannot help, so the
 * agent stops retrying); the database being down, or anything else, is to be resent later.
 */
@Catch()
export class AgentsAckFilter extends AckExceptionFilter {
  constructor(private readonly logger = new Logger('AgentsGateway')) {
    super();
  }

  protected answer(err: unknown, { event, payload, client }: FailedEvent) {
    const name = (client as { data?: { agentName?: string } }).data?.agentName;
    if (err instanceof MalformedPayload) {
      const first = describeIssues(err.error, 5);
      this.logger.warn(`agent ${name}: malformed ${event}: ${first}`);
      return finalRefusal(
        'invalid_payload',
        `malformed ${event}, refused for good (do not resend): ${first}`,
      );
    }
    const runId = (payload as { runId?: unknown } | undefined)?.runId;
    const fields = typeof runId === 'string' ? forRun(runId) : new LogFields({});
    if (isDatabaseUnavailable(err))
      return agentRefusal(
        'database_unavailable',
        "The hub's database is unavailable right now; resend later.",
      );
    if (err instanceof AppError && err.status < 500) {
      this.logger.warn(`agent ${name}: ${event} refused: ${err.message}`, fields);
      return finalRefusal(err.code, err.message);
    }
    this.logger.error(`agent ${name}: ${event} failed: ${(err as Error).stack ?? err}`, fields);
    return agentRefusal('internal_error', 'The server could not process this; resend later.');
  }
}
