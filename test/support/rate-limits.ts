/**
 * Rate limits far above what any test does, for the hubs the tests start: every test client comes
 * from 127.0.0.1 and many tests create users, teams, tokens and runs quickly, so the production
 * defaults would throttle them by accident. The checks still run; a test of the limits passes its
 * own values after these (`env` wins).
 */
export const GENEROUS_RATE_LIMITS: Record<string, string> = {
  RATE_LIMIT_JOIN: '100000/60',
  RATE_LIMIT_SIGNIN: '100000/60',
  RATE_LIMIT_AUTH_FAILURES: '100000/60',
  RATE_LIMIT_UPLOADS: '100000/60',
  RATE_LIMIT_RUNS: '100000/60',
  RATE_LIMIT_CREATE: '100000/60',
  RATE_LIMIT_SOCKET: '100000/60',
  RATE_LIMIT_PUBLIC: '1000000/60',
};
