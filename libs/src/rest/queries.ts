import { z } from 'zod';
import { RunStatus } from './runs';

/**
 * Query strings of the REST routes, checked at the edge: a value the server can never use is
 * refused with 400 and a message naming the parameter and what to send instead, before any
 * database query (issue 14: a bad id or an out-of-range cursor used to answer 500).
 */
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
export const isUuid = (value: unknown): value is string => typeof value === 'string' && UUID.test(value);

/** The largest log line number (a 32-bit column). */
export const MAX_LOG_SEQ = 2_147_483_647;

export const uuidString = (name: string) =>
  z
    .string()
    .regex(
      UUID,
      `${name} must be an id as the API returns it (a UUID like 3f2c1b9e-8d4a-4c1e-9a7b-2f6d5e4c3b2a)`,
    )
    .transform((v) => v.toLowerCase());

/** A whole number written with digits only (no sign, exponent or fraction), from `min` to `max`. */
export const intQuery = (name: string, min: number, max: number) =>
  z
    .string()
    .regex(/^\d{1,16}$/, `${name} must be a whole number written with digits only, from ${min} to ${max}`)
    .transform(Number)
    .refine((n) => n >= min && n <= max, `${name} must be from ${min} to ${max}`);

const cursor = z.string().max(512, 'cursor must be the nextCursor of the previous page, unchanged');
const benchmark = z.string().min(1).max(100);

export const RunsListQuery = z.object({
  benchmark: benchmark.optional(),
  status: z
    .string()
    .refine(
      (s) => (RunStatus.options as string[]).includes(s),
      `status must be one of ${RunStatus.options.join(', ')}`,
    )
    .optional(),
  submission: uuidString('submission').optional(),
  cursor: cursor.optional(),
  limit: intQuery('limit', 1, 100).optional(),
});
export type RunsListQuery = z.infer<typeof RunsListQuery>;

export const LogsQuery = z.object({
  after: intQuery('after', 0, MAX_LOG_SEQ).optional(),
  limit: intQuery('limit', 1, 5000).optional(),
});
export type LogsQuery = z.infer<typeof LogsQuery>;

export const SubmissionsListQuery = z.object({
  benchmark: benchmark.optional(),
  cursor: cursor.optional(),
  limit: intQuery('limit', 1, 100).optional(),
});
export type SubmissionsListQuery = z.infer<typeof SubmissionsListQuery>;

export const QuotaQuery = z.object({ benchmark: benchmark.optional() });
