import type { Logger } from '@nestjs/common';
import { refusal } from '@dryft/libs';
import type { z } from 'zod';
import { AppError } from '../common/errors';
import { LATENCY_TRACE, lastEvent, traceNow } from '../common/latency-trace';
import { databaseUnavailable, isDatabaseUnavailable } from '../common/database-errors';

/** The socket side both gateways share: what a middleware and an event listener receive. */
interface HandshakeSocket {
  handshake: { auth: unknown; headers: { cookie?: string } };
  data: Record<string, unknown>;
}
interface ListeningSocket {
  on(event: string, listener: (raw: unknown, ack?: unknown) => void): unknown;
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
 * One acknowledged event: the payload is parsed with its zod schema (or a parser that decides
 * exactly as the schema does, like `parseRunBatch`) before anything is done, the
 * handler's answer is the ack, and the ack is always answered (a client that sent none gets
 * nothing). `malformed` answers a payload the schema refuses; `failed` answers a handler that threw.
 */
export function onAcked<T>(
  socket: ListeningSocket,
  event: string,
  schema: { safeParse(raw: unknown): z.ZodSafeParseResult<T> },
  handlers: {
    handle: (payload: T) => Promise<unknown>;
    malformed: (message: string, error: z.ZodError) => unknown;
    failed: (err: unknown) => unknown;
    /** What a missing payload is taken as (default: undefined). */
    empty?: unknown;
  },
): void {
  socket.on(event, (raw: unknown, ack?: unknown) => {
    if (LATENCY_TRACE) lastEvent.received = traceNow();
    const reply = typeof ack === 'function' ? (ack as (r: unknown) => void) : () => undefined;
    const parsed = schema.safeParse(raw ?? handlers.empty);
    if (LATENCY_TRACE) lastEvent.parsed = traceNow();
    if (!parsed.success) {
      reply(handlers.malformed(describeIssues(parsed.error), parsed.error));
      return;
    }
    handlers.handle(parsed.data).then(reply, (err: unknown) => reply(handlers.failed(err)));
  });
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
    if (event in known) return;
    warn(event);
    const ack = args[args.length - 1];
    if (typeof ack === 'function')
      (ack as (r: unknown) => void)(refusal('unknown_event', `Unknown event "${event}".`));
  });
}
