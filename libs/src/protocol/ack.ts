import { z } from 'zod';

/**
 * The one error shape of a socket acknowledgement, on `/live` and `/agents` alike: the REST error's
 * `{ code, message }` (libs/src/errors.ts), a stable snake_case code for programs to branch on and
 * a sentence for people. Clients compare codes, never messages.
 */
export const AckError = z.object({ code: z.string(), message: z.string() });
export type AckError = z.infer<typeof AckError>;

/**
 * Every acknowledgement: `ok`, and when it is false the error. An event's ack adds its own fields
 * beside these (a join's `run`, a batch's `ackedSeq`, a heartbeat's `stop`, …).
 */
export const Ack = z.object({ ok: z.boolean(), error: AckError.optional() });
export type Ack = z.infer<typeof Ack>;

/** A refused acknowledgement: `{ ok: false, error: { code, message } }`. */
export const refusal = (code: string, message: string): { ok: false; error: AckError } => ({
  ok: false,
  error: { code, message },
});

/** A refused acknowledgement as a log line says it: `code: message`. */
export const describeRefusal = (ack: Ack): string =>
  ack.error ? `${ack.error.code}: ${ack.error.message}` : 'no reason given';
