import type { Logger } from '@nestjs/common';
import { refusal } from '@dryft/libs';
import type { z } from 'zod';
import { AppError } from '../common/errors';
import { databaseUnavailable, isDatabaseUnavailable } from '../common/database-errors';

/** The socket side both gateways share: what a middleware and a catch-all listener receive. */
interface HandshakeSocket {
  handshake: { auth: unknown; headers: { cookie?: string } };
  data: Record<string, unknown>;
}
interface ListeningSocket {
  onAny(listener: (event: string, ...args: unknown[]) => void): unknown;
}

/**
 * The handshake of a namespace: `authenticate` identifies the caller (and stores who it is on
 * `socket.data`); a refusal reaches the client as a connect_error whose `data.code` is the API's
 * error code. The database being down is said as such, never as an authentication failure.
 */
export function authenticatedHandshake<S extends HandshakeSocket>(
  logger: Logger,
  label: string,
  authenticate: (socket: S) => Promise<void>,
): (socket: S, next: (err?: Error) => void) => void {
  return (socket, next) => {
    authenticate(socket).then(
      () => next(),
      (err: unknown) => {
        const e = err instanceof AppError ? err : isDatabaseUnavailable(err) ? databaseUnavailable() : null;
        if (!e) logger.error(`${label} handshake failed: ${(err as Error).stack ?? err}`);
        const refusal = new Error(e?.message ?? 'Authentication failed.') as Error & { data?: unknown };
        refusal.data = { code: e?.code ?? 'internal_error' };
        // A rate-limited handshake says when to retry (`details.retryAfterSeconds`).
        if (e?.details !== undefined) (refusal.data as { details?: unknown }).details = e.details;
        next(refusal);
      },
    );
  };
}

/** What a malformed payload is said as: the first issues, by path. */
export function describeIssues(error: z.ZodError, max = Infinity): string {
  return error.issues
    .slice(0, max)
    .map((i) => `${i.path.join('.') || 'payload'}: ${i.message}`)
    .join('; ');
}

/**
 * An event the namespace does not know is ignored, said through `warn`, and its ack (when the
 * client asked for one) is answered with the refusal `unknown_event`.
 */
export function answerUnknownEvents(
  socket: ListeningSocket,
  known: Record<string, unknown>,
  warn: (event: string) => void,
): void {
  socket.onAny((event: string, ...args: unknown[]) => {
    // Own keys only: `__proto__`, `constructor` and the like are not events of the namespace.
    if (Object.prototype.hasOwnProperty.call(known, event)) return;
    warn(event);
    const ack = args[args.length - 1];
    if (typeof ack === 'function')
      (ack as (r: unknown) => void)(refusal('unknown_event', `Unknown event "${event}".`));
  });
}
