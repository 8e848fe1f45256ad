import * as path from 'node:path';
import { z } from 'zod';

const bool = z
  .enum(['true', 'false', '1', '0', 'yes', 'no'])
  .transform((v) => v === 'true' || v === '1' || v === 'yes');

const list = z.string().transform((v) =>
  v
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean),
);

/**
 * Every setting the API reads, with its default. A bad value stops the process at boot with one
 * line per problem (see `loadConfig`), never a half-configured hub.
 */
export const EnvSchema = z.object({
  NODE_ENV: z.enum(['development', 'production', 'test']).default('development'),
  PORT: z.coerce.number().int().min(0).max(65535).default(3000),
  HOST: z.string().default('0.0.0.0'),
  PUBLIC_URL: z.string().url().default('http://localhost:3000'),
  DATA_DIR: z.string().default('./.data'),
  DATABASE_URL: z.string().url().optional(),
  EMBEDDED_PG_PORT: z.coerce.number().int().min(1024).max(65535).optional(),
  ARTIFACT_DIR: z.string().optional(),
  REDIS_URL: z.string().url().optional(),
  BENCHMARKS_DIR: z.string().default('./config/benchmarks'),
  WEB_DIR: z.string().default('./apps/web/build'),
  ADMIN_LOGINS: list.default([]),
  SESSION_TTL_HOURS: z.coerce
    .number()
    .positive()
    .default(24 * 30),
  GITHUB_CLIENT_ID: z.string().optional(),
  GITHUB_CLIENT_SECRET: z.string().optional(),
  GITHUB_WEB_URL: z.string().url().default('https://github.com'),
  GITHUB_API_URL: z.string().url().default('https://api.github.com'),
  GITHUB_APP_ID: z.string().optional(),
  GITHUB_APP_SLUG: z.string().optional(),
  GITHUB_APP_PRIVATE_KEY: z.string().optional(),
  GITHUB_WEBHOOK_SECRET: z.string().optional(),
  /** Attempts at a GitHub call that fails for a transient reason (unreachable, 5xx, 429) before a delivery fails. */
  GITHUB_RETRY_ATTEMPTS: z.coerce.number().int().min(1).max(10).default(5),
  /** First delay between those attempts; it doubles each time (1 s, 2 s, 4 s, 8 s by default). */
  GITHUB_RETRY_BASE_MS: z.coerce.number().int().min(0).default(1000),
  /** Writes a token for the local agent that `npm start` launches (development only). */
  LOCAL_AGENT_TOKEN_FILE: z.string().optional(),
  /** Redis stream (and pub/sub prefix) the socket.io replicas of one hub share; one per hub on a shared Redis. */
  REDIS_STREAM: z.string().min(1).default('dryft-socket.io'),
  /** Seconds after the whole-run deadline before the server fails a run no agent reported on. */
  DEADLINE_GRACE_SECONDS: z.coerce.number().nonnegative().default(5),
  /** Seconds an agent may go without a heartbeat before its runs fail as infra_error. */
  AGENT_LEASE_SECONDS: z.coerce.number().positive().default(30),
  /** Outgoing team webhooks (run.finished): attempts per delivery, and the first retry delay (doubles). */
  OUTGOING_WEBHOOK_ATTEMPTS: z.coerce.number().int().min(1).max(20).default(6),
  OUTGOING_WEBHOOK_RETRY_SECONDS: z.coerce.number().int().min(1).default(10),
  OUTGOING_WEBHOOK_TIMEOUT_MS: z.coerce.number().int().min(100).default(10_000),
  /** Let team webhooks post to private and loopback addresses (a closed event on its own network; tests). */
  OUTGOING_WEBHOOK_ALLOW_PRIVATE: bool.default(false),
  /**
   * How often each replica re-checks the credentials and memberships of its open `/live` sockets, a
   * safety net behind the instant cut on revoke, removal and logout (a missed cross-replica message).
   */
  LIVE_ACCESS_SWEEP_SECONDS: z.coerce.number().positive().default(30),
  LOG_LEVEL: z.enum(['error', 'warn', 'log', 'debug']).default('log'),
  COOKIE_SECURE: bool.optional(),
});

export type Env = z.infer<typeof EnvSchema>;

export interface Config extends Env {
  rootDir: string;
  dataDir: string;
  artifactDir: string;
  benchmarksDir: string;
  webDir: string;
  isProduction: boolean;
  cookieSecure: boolean;
  githubOAuthConfigured: boolean;
  githubAppConfigured: boolean;
  version: string;
}

export class ConfigError extends Error {
  constructor(public readonly problems: string[]) {
    super(`Invalid configuration:\n${problems.map((p) => `  ${p}`).join('\n')}`);
  }
}

/** The repository root: where `npm start` runs, and where relative paths in the env resolve. */
export function findRootDir(): string {
  return process.env.DRYFT_ROOT ?? path.resolve(__dirname, '..', '..', '..', '..');
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env, rootDir = findRootDir()): Config {
  const parsed = EnvSchema.safeParse(env);
  if (!parsed.success) {
    throw new ConfigError(
      parsed.error.issues.map(
        (i) => `${i.path.join('.')}: ${i.message} (got ${JSON.stringify(env[String(i.path[0])])})`,
      ),
    );
  }
  const e = parsed.data;
  const problems: string[] = [];
  if (Boolean(e.GITHUB_CLIENT_ID) !== Boolean(e.GITHUB_CLIENT_SECRET)) {
    problems.push('GITHUB_CLIENT_ID and GITHUB_CLIENT_SECRET: set both or neither');
  }
  const appVars = [e.GITHUB_APP_ID, e.GITHUB_APP_PRIVATE_KEY, e.GITHUB_WEBHOOK_SECRET];
  if (appVars.some(Boolean) && !appVars.every(Boolean)) {
    problems.push('GITHUB_APP_ID, GITHUB_APP_PRIVATE_KEY and GITHUB_WEBHOOK_SECRET: set all three or none');
  }
  if (e.NODE_ENV === 'production' && !e.DATABASE_URL) {
    problems.push('DATABASE_URL: required in production (embedded Postgres is for development)');
  }
  if (problems.length) throw new ConfigError(problems);
  const resolve = (p: string) => path.resolve(rootDir, p);
  const dataDir = resolve(e.DATA_DIR);
  return {
    ...e,
    rootDir,
    dataDir,
    artifactDir: e.ARTIFACT_DIR ? resolve(e.ARTIFACT_DIR) : path.join(dataDir, 'artifacts'),
    benchmarksDir: resolve(e.BENCHMARKS_DIR),
    webDir: resolve(e.WEB_DIR),
    isProduction: e.NODE_ENV === 'production',
    cookieSecure: e.COOKIE_SECURE ?? e.NODE_ENV === 'production',
    githubOAuthConfigured: Boolean(e.GITHUB_CLIENT_ID && e.GITHUB_CLIENT_SECRET),
    githubAppConfigured: Boolean(e.GITHUB_APP_ID && e.GITHUB_APP_PRIVATE_KEY && e.GITHUB_WEBHOOK_SECRET),
    version: process.env.npm_package_version ?? '0.1.0',
  };
}

export const CONFIG = Symbol('CONFIG');
