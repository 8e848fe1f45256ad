import { AppError, serviceUnavailable } from './errors';

/** What a client is told to wait before retrying while the database is unreachable. */
export const DATABASE_RETRY_AFTER_SECONDS = 5;

/** Network failures reaching Postgres (refused, reset, timed out, its socket gone). */
const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'EHOSTUNREACH',
  'ENETUNREACH',
]);
/**
 * SQLSTATEs of a server that is down, starting, stopping or full: class 08 (connection exception),
 * 57P01-57P03 (admin/crash shutdown, cannot connect now), 53300 (too many connections).
 */
const SQLSTATES = new Set(['08000', '08001', '08003', '08004', '08006', '57P01', '57P02', '57P03', '53300']);
const MESSAGES =
  /Connection terminated|connection timeout|timeout exceeded when trying to connect|is not queryable|Connection ended|terminating connection|database system is (starting up|shutting down|in recovery mode)/i;

/**
 * Whether an error means "the database cannot be reached right now" (as opposed to a bad query):
 * such errors become 503 `database_unavailable` with Retry-After, never 500, and the pool recovers
 * by itself when Postgres is back.
 */
export function isDatabaseUnavailable(err: unknown): boolean {
  for (let e = err as Record<string, unknown> | undefined, depth = 0; e && depth < 4; depth++) {
    const code = typeof e.code === 'string' ? e.code : undefined;
    if (code && (NETWORK_CODES.has(code) || SQLSTATES.has(code))) return true;
    if (code === 'ENOENT' && e.syscall === 'connect') return true;
    if (typeof e.message === 'string' && MESSAGES.test(e.message)) return true;
    // TypeORM wraps the driver's error; pg may wrap a socket error as `cause`.
    e = (e.driverError ?? e.cause) as Record<string, unknown> | undefined;
  }
  return false;
}

export const databaseUnavailable = (): AppError =>
  serviceUnavailable(
    'database_unavailable',
    `The hub's database is unavailable right now; nothing was changed. Retry in ${DATABASE_RETRY_AFTER_SECONDS} s.`,
  );
