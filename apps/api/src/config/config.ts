import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { availableParallelism } from 'node:os';
import { z } from 'zod';
import { trustedProxies } from '../rate-limits/client-ip';

const bool = z
  .enum(['true', 'false', '1', '0', 'yes', 'no'])
  .transform((v) => v === 'true' || v === '1' || v === 'yes');

const list = z.string().transform((v) =>
  v
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean),
);

/** A rate limit: `COUNT/SECONDS`, e.g. `5/60` for five a minute. */
export interface RateSetting {
  limit: number;
  seconds: number;
}

const rate = (fallback: string) =>
  z
    .string()
    .regex(/^\s*\d+\s*\/\s*\d+\s*$/, 'write it as COUNT/SECONDS, e.g. 5/60 for five a minute')
    .default(fallback)
    .transform((v, ctx): RateSetting => {
      const [limit, seconds] = v.split('/').map((p) => Number(p.trim()));
      if (limit < 1 || seconds < 1) {
        ctx.addIssue({ code: 'custom', message: 'COUNT and SECONDS must both be at least 1' });
        return z.NEVER;
      }
      return { limit, seconds };
    });

/**
 * Every setting the API reads, with its default. A bad value stops the process at boot with one
 * line per problem (see `loadConfig`), never a half-configured hub.
 */
export const EnvSchema = z.object({
  NODE_ENV: z.enum(['development', 'production', 'test']).default('development'),
  PORT: z.coerce.number().int().min(0).max(65535).default(3000),
  HOST: z.string().default('0.0.0.0'),
  /** Unset: http://localhost:PORT (the hub as a browser on this machine sees it); see `publicUrlSet`. */
  PUBLIC_URL: z.string().url().optional(),
  DATA_DIR: z.string().default('./.data'),
  DATABASE_URL: z.string().url().optional(),
  /**
   * The database password, put into DATABASE_URL (which then carries none): lets the password come
   * from a file (DATABASE_PASSWORD_FILE, a Docker secret) that Postgres's own image reads as well.
   */
  DATABASE_PASSWORD: z.string().min(1).optional(),
  EMBEDDED_PG_PORT: z.coerce.number().int().min(1024).max(65535).optional(),
  ARTIFACT_DIR: z.string().optional(),
  /**
   * Most Postgres connections this API process's pool opens (pg-boss adds 4 of its own when jobs
   * run): the per-replica budget in docs/DEPLOY.md.
   */
  DATABASE_POOL_MAX: z.coerce.number().int().min(2).max(1000).default(20),
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
  /**
   * The secret derived hidden seeds come from (64 hex characters, `openssl rand -hex 32`). Unset:
   * DATA_DIR/hidden-seed.secret, made at first start. Set it (or HIDDEN_SEED_SECRET_FILE) when
   * replicas do not share one DATA_DIR: each would otherwise make its own, and hidden prompts would
   * depend on the replica.
   */
  HIDDEN_SEED_SECRET: z
    .string()
    .regex(/^[0-9a-f]{64}$/, 'write 64 lowercase hex characters (openssl rand -hex 32)')
    .optional(),
  /**
   * Which proxies' X-Forwarded-For the hub believes (Express "trust proxy"): the client address
   * per-IP rate limits count: a comma list of loopback, linklocal, uniquelocal, addresses and CIDRs.
   * Behind a proxy on a container network, `loopback, uniquelocal`.
   */
  TRUST_PROXY: z.string().min(1).default('loopback'),
  /** Attempts at a GitHub call that fails for a transient reason (unreachable, 5xx, 429) before a delivery fails. */
  GITHUB_RETRY_ATTEMPTS: z.coerce.number().int().min(1).max(10).default(5),
  /** First delay between those attempts; it doubles each time (1 s, 2 s, 4 s, 8 s by default). */
  GITHUB_RETRY_BASE_MS: z.coerce.number().int().min(0).default(1000),
  /**
   * The longest GitHub rate-limit wait (`retry-after`, `x-ratelimit-reset`) a call sits out before
   * trying again; a longer one fails the delivery at once, saying when GitHub takes calls again.
   */
  GITHUB_RATE_LIMIT_MAX_WAIT_SECONDS: z.coerce.number().int().min(0).default(120),
  /**
   * Times a push (or redelivery) whose upload found every upload checker busy (503 `checker_busy`)
   * is queued again, after its Retry-After doubled at each try (at most 5 minutes apart), before the
   * delivery fails and waits for a redelivery.
   */
  GITHUB_CHECKER_BUSY_RETRIES: z.coerce.number().int().min(0).max(50).default(8),
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
   * How long before a scheduled close every team hears `round.closing` (browser and webhook); a close
   * scheduled sooner is announced at once. 0: no notice.
   */
  ROUND_CLOSING_NOTICE_MINUTES: z.coerce.number().int().min(0).max(10_080).default(60),
  /**
   * How often each replica re-checks the credentials and memberships of its open `/live` sockets, a
   * safety net behind the instant cut on revoke, removal and logout (a missed cross-replica message).
   */
  LIVE_ACCESS_SWEEP_SECONDS: z.coerce.number().positive().default(30),
  /**
   * Upload checks (archive rules, the Python syntax check) run on worker threads, never on the event
   * loop: threads at most (default: the cores less one for the event loop, 1 to 4), uploads that may
   * wait for one (then 503 `checker_busy`), and each upload's budget from arrival to verdict.
   */
  UPLOAD_CHECK_WORKERS: z.coerce
    .number()
    .int()
    .min(1)
    .max(64)
    .default(() => Math.max(1, Math.min(4, availableParallelism() - 1))),
  UPLOAD_CHECK_QUEUE: z.coerce.number().int().min(0).max(1000).default(8),
  UPLOAD_CHECK_TIMEOUT_SECONDS: z.coerce.number().positive().default(30),
  /**
   * Quotas that protect the hub, per team: submissions stored per UTC day (uploads and repository
   * pushes), bytes of submissions stored in all, public decode runs per UTC day where the benchmark's
   * definition sets no `dailyLimits.public`, and runs waiting in the queue at once.
   */
  TEAM_UPLOADS_PER_DAY: z.coerce.number().int().min(1).default(200),
  TEAM_STORAGE_MIB: z.coerce.number().positive().default(1024),
  TEAM_PUBLIC_RUNS_PER_DAY: z.coerce.number().int().min(1).default(200),
  TEAM_QUEUED_RUNS: z.coerce.number().int().min(1).default(20),
  LOG_LEVEL: z.enum(['error', 'warn', 'log', 'debug']).default('log'),
  /** `json`: one JSON object per log line (for a log collector); unset: json in production, else text. */
  LOG_FORMAT: z.enum(['json', 'text']).optional(),
  /**
   * A second HTTP listener of this replica that serves only `GET /metrics` (Prometheus text, no
   * credentials) for a scraper on a private network; unset, metrics are read by organizers at
   * `/api/admin/metrics` only. `0` picks a free port (tests).
   */
  METRICS_PORT: z.coerce.number().int().min(0).max(65535).optional(),
  /**
   * `false`: no metrics are collected at all (no bus listeners, no default process collectors) and
   * both metrics routes answer 404 metrics_disabled; for an operator without Prometheus, and for
   * `npm run bench`'s side-by-side measure of what the metrics cost (bench/ab.mjs).
   */
  METRICS_ENABLED: bool.default(true),
  /** Address the metrics listener binds: loopback unless a scraper elsewhere must reach it. */
  METRICS_HOST: z.string().min(1).default('127.0.0.1'),
  /**
   * Rate limits (COUNT/SECONDS; docs/API.md "Rate limits"). Per signed-in user, per team API token,
   * or per IP address for a caller without credentials; shared by every replica through Redis when
   * REDIS_URL is set. Joining by invite code: this many attempts, then a lockout that doubles with
   * each lockout in a day, from the first to the longest.
   */
  RATE_LIMIT_JOIN: rate('5/60'),
  RATE_LIMIT_JOIN_LOCKOUT_SECONDS: z.coerce.number().int().min(1).default(60),
  RATE_LIMIT_JOIN_LOCKOUT_MAX_SECONDS: z.coerce.number().int().min(1).default(3600),
  /**
   * Sign-ins (dev sign-in, the GitHub OAuth start and callback), per IP. The address limits are set
   * for an event whose participants share one venue address (NAT): raise them for a bigger one.
   */
  RATE_LIMIT_SIGNIN: rate('60/60'),
  /** Requests whose team API token fails authentication, per IP; past it every token request from that IP waits. */
  RATE_LIMIT_AUTH_FAILURES: rate('20/60'),
  RATE_LIMIT_UPLOADS: rate('30/60'),
  RATE_LIMIT_RUNS: rate('30/60'),
  /** Team and API token creation. */
  RATE_LIMIT_CREATE: rate('10/60'),
  /** `/live` and `/agents` connection attempts, per IP and namespace (refused at the handshake). */
  RATE_LIMIT_SOCKET: rate('600/60'),
  /** Reads without credentials (leaderboards, benchmarks, public team pages), per IP, counted by each replica. */
  RATE_LIMIT_PUBLIC: rate('6000/60'),
  COOKIE_SECURE: bool.optional(),
});

export type Env = z.infer<typeof EnvSchema>;

export interface Config extends Omit<Env, 'PUBLIC_URL'> {
  /** PUBLIC_URL, else http://localhost:PORT. */
  PUBLIC_URL: string;
  /** Whether PUBLIC_URL was set: outside production, an unset one gives way to the address a request came to. */
  publicUrlSet: boolean;
  rootDir: string;
  dataDir: string;
  artifactDir: string;
  benchmarksDir: string;
  webDir: string;
  isProduction: boolean;
  /** LOG_FORMAT, else json in production and text elsewhere. */
  logFormat: 'json' | 'text';
  cookieSecure: boolean;
  githubOAuthConfigured: boolean;
  githubAppConfigured: boolean;
  version: string;
}

/**
 * Settings that may come from a file instead (`X_FILE=/run/secrets/x`, as Docker secrets are
 * mounted): read when X itself is unset, with the file's trailing newline dropped; an empty file
 * leaves X unset. Only these: a
 * name that merely ends in _FILE (LOCAL_AGENT_TOKEN_FILE) is a setting of its own.
 */
export const FILE_SETTINGS = [
  'DATABASE_URL',
  'DATABASE_PASSWORD',
  'REDIS_URL',
  'GITHUB_CLIENT_ID',
  'GITHUB_CLIENT_SECRET',
  'GITHUB_APP_ID',
  'GITHUB_APP_PRIVATE_KEY',
  'GITHUB_WEBHOOK_SECRET',
  'HIDDEN_SEED_SECRET',
  'ADMIN_LOGINS',
] as const;

/**
 * The environment with every `X_FILE` of {@link FILE_SETTINGS} replaced by X read from that file;
 * a file that cannot be read is a problem naming the variable and the path.
 */
export function resolveFileSettings(
  env: NodeJS.ProcessEnv,
  rootDir: string,
): { env: NodeJS.ProcessEnv; problems: string[] } {
  const out: NodeJS.ProcessEnv = { ...env };
  const problems: string[] = [];
  for (const name of FILE_SETTINGS) {
    const fileVar = `${name}_FILE`;
    const file = env[fileVar];
    if (!file) continue;
    delete out[fileVar];
    if (env[name]) {
      problems.push(`${name} and ${fileVar}: set one or the other, not both`);
      continue;
    }
    const full = path.resolve(rootDir, file);
    let text: string;
    try {
      text = readFileSync(full, 'utf8');
    } catch (err) {
      const reason = (err as NodeJS.ErrnoException).code ?? (err as Error).message;
      problems.push(
        `${fileVar}: cannot read ${full} (${reason}); create it, make it readable by uid ${process.getuid?.() ?? '?'}, or set ${name} instead`,
      );
      continue;
    }
    text = text.replace(/[\r\n]+$/, '');
    // An empty file leaves the setting unset: the compose stack mounts a file for every secret,
    // and the optional ones (the GitHub App's) stay empty until used. The checks below still
    // catch a half-set group ("set both or neither").
    if (!text.trim()) continue;
    out[name] = text;
  }
  return { env: out, problems };
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

export function loadConfig(given: NodeJS.ProcessEnv = process.env, rootDir = findRootDir()): Config {
  const files = resolveFileSettings(given, rootDir);
  if (files.problems.length) throw new ConfigError(files.problems);
  const env = files.env;
  const parsed = EnvSchema.safeParse(env);
  if (!parsed.success) {
    throw new ConfigError(
      parsed.error.issues.map((i) => {
        const name = String(i.path[0]);
        // A secret read from a file is never echoed back.
        const shown = given[`${name}_FILE`] ? `the contents of ${name}_FILE` : JSON.stringify(env[name]);
        return `${i.path.join('.')}: ${i.message} (got ${shown})`;
      }),
    );
  }
  const e = parsed.data;
  const problems: string[] = [];
  if (e.DATABASE_PASSWORD) {
    if (!e.DATABASE_URL) {
      problems.push('DATABASE_PASSWORD: set DATABASE_URL too (without a password; this one is put into it)');
    } else {
      const url = new URL(e.DATABASE_URL);
      if (url.password) {
        problems.push(
          'DATABASE_URL and DATABASE_PASSWORD: DATABASE_URL already holds a password; keep it in one place',
        );
      } else {
        url.password = encodeURIComponent(e.DATABASE_PASSWORD);
        e.DATABASE_URL = url.toString();
      }
    }
  }
  if (Boolean(e.GITHUB_CLIENT_ID) !== Boolean(e.GITHUB_CLIENT_SECRET)) {
    problems.push('GITHUB_CLIENT_ID and GITHUB_CLIENT_SECRET: set both or neither');
  }
  const appVars = [e.GITHUB_APP_ID, e.GITHUB_APP_PRIVATE_KEY, e.GITHUB_WEBHOOK_SECRET];
  if (appVars.some(Boolean) && !appVars.every(Boolean)) {
    problems.push('GITHUB_APP_ID, GITHUB_APP_PRIVATE_KEY and GITHUB_WEBHOOK_SECRET: set all three or none');
  }
  if (e.RATE_LIMIT_JOIN_LOCKOUT_MAX_SECONDS < e.RATE_LIMIT_JOIN_LOCKOUT_SECONDS) {
    problems.push(
      'RATE_LIMIT_JOIN_LOCKOUT_MAX_SECONDS: must be at least RATE_LIMIT_JOIN_LOCKOUT_SECONDS (the longest lockout is never shorter than the first)',
    );
  }
  const proxies = trustedProxies(e.TRUST_PROXY);
  if ('problem' in proxies) problems.push(`TRUST_PROXY: ${proxies.problem}`);
  if (e.NODE_ENV === 'production' && !e.DATABASE_URL) {
    problems.push('DATABASE_URL: required in production (embedded Postgres is for development)');
  }
  if (problems.length) throw new ConfigError(problems);
  const resolve = (p: string) => path.resolve(rootDir, p);
  const dataDir = resolve(e.DATA_DIR);
  return {
    ...e,
    PUBLIC_URL: (e.PUBLIC_URL ?? `http://localhost:${e.PORT || 3000}`).replace(/\/+$/, ''),
    publicUrlSet: e.PUBLIC_URL !== undefined,
    rootDir,
    dataDir,
    artifactDir: e.ARTIFACT_DIR ? resolve(e.ARTIFACT_DIR) : path.join(dataDir, 'artifacts'),
    benchmarksDir: resolve(e.BENCHMARKS_DIR),
    webDir: resolve(e.WEB_DIR),
    isProduction: e.NODE_ENV === 'production',
    logFormat: e.LOG_FORMAT ?? (e.NODE_ENV === 'production' ? 'json' : 'text'),
    cookieSecure: e.COOKIE_SECURE ?? e.NODE_ENV === 'production',
    githubOAuthConfigured: Boolean(e.GITHUB_CLIENT_ID && e.GITHUB_CLIENT_SECRET),
    githubAppConfigured: Boolean(e.GITHUB_APP_ID && e.GITHUB_APP_PRIVATE_KEY && e.GITHUB_WEBHOOK_SECRET),
    version: process.env.npm_package_version ?? '0.1.0',
  };
}

export const CONFIG = Symbol('CONFIG');
