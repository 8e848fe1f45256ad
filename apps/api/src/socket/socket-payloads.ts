import { Catch, type ArgumentsHost, type PipeTransform, type WsExceptionFilter } from '@nestjs/common';
import { ZodError, type z } from 'zod';
import { LATENCY_TRACE, traceNow } from '../common/latency-trace';
import { describeIssues } from './socket-handlers';

/**
 * What a gateway handler receives as its payload when the client sent more than one argument
 * before the ack (HubIoAdapter): never a payload, always refused by {@link ZodPayloadPipe}.
 */
export class ExtraArguments {
  constructor(
    readonly event: string,
    readonly args: unknown[],
  ) {}

  /** Said as today's protocols say it: one payload and an ack. */
  toZodError(): ZodError {
    return new ZodError([
      {
        code: 'custom',
        path: [],
        message: `${this.event} takes one payload (an object) and an ack; it was sent ${this.args.length} arguments`,
        input: this.args,
      },
    ]);
  }
}

/** With DRYFT_LATENCY_TRACE: when a payload arrived (HubIoAdapter), keyed by the payload as sent. */
export const arrivals = new WeakMap<object, number>();
const instants = new WeakMap<object, { received: number; parsed: number }>();

/**
 * With DRYFT_LATENCY_TRACE: when this parsed payload arrived and when it was parsed (ZodPayloadPipe).
 * Per payload, not "the event being handled now": Nest runs its handlers some microtasks after the
 * event, by when another event of the same read may have arrived.
 */
export const receivedAt = (parsed: unknown): { received: number; parsed: number } =>
  (typeof parsed === 'object' && parsed !== null && instants.get(parsed)) || { received: 0, parsed: 0 };

/** A payload its schema refused: the gateway's exception filter answers it (`message`: the issues). */
export class MalformedPayload extends Error {
  constructor(
    readonly error: z.ZodError,
    message = describeIssues(error),
  ) {
    super(message);
    this.name = 'MalformedPayload';
  }
}

/**
 * A message body parsed with its zod schema (or a parser that decides exactly as the schema does,
 * like `parseRunBatch`) before the handler runs; a refused one throws {@link MalformedPayload}.
 * `empty`: what a missing payload is taken as (default: undefined).
 */
export class ZodPayloadPipe<T> implements PipeTransform<unknown, T> {
  constructor(
    private readonly schema: { safeParse(raw: unknown): z.ZodSafeParseResult<T> },
    private readonly empty?: unknown,
  ) {}

  transform(raw: unknown): T {
    if (raw instanceof ExtraArguments) throw new MalformedPayload(raw.toZodError());
    const parsed = this.schema.safeParse(raw ?? this.empty);
    if (!parsed.success) throw new MalformedPayload(parsed.error);
    if (
      LATENCY_TRACE &&
      typeof raw === 'object' &&
      raw !== null &&
      typeof parsed.data === 'object' &&
      parsed.data
    )
      instants.set(parsed.data, { received: arrivals.get(raw) ?? 0, parsed: traceNow() });
    return parsed.data;
  }
}

/** What an ack filter knows of the failed event. */
export interface FailedEvent {
  event: string;
  /** The payload as the client sent it (a failed handler's `runId` goes on the log line). */
  payload: unknown;
  client: unknown;
}

/**
 * A gateway's exception filter: whatever a handler or its pipe threw is answered on the event's
 * ack in the protocol's `{ ok: false, error: { code, message } }` shape (`answer`), and nothing
 * else is sent (Nest's default filter emits an `exception` event instead). A client that asked for
 * no ack gets nothing.
 */
@Catch()
export abstract class AckExceptionFilter implements WsExceptionFilter {
  catch(err: unknown, host: ArgumentsHost): void {
    const ws = host.switchToWs();
    // Nest calls the handler with (client, payload, ack, pattern): HubIoAdapter always passes the ack.
    const reply = host.getArgByIndex<unknown>(2);
    const answer = this.answer(err, {
      event: String(ws.getPattern()),
      payload: ws.getData<unknown>(),
      client: ws.getClient<unknown>(),
    });
    if (typeof reply === 'function') (reply as (answer: unknown) => void)(answer);
  }

  protected abstract answer(err: unknown, failed: FailedEvent): unknown;
}
