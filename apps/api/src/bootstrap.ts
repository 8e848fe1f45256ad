import 'reflect-metadata';
import { INestApplication, Logger, LogLevel } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import type { NestExpressApplication } from '@nestjs/platform-express';
import cookieParser from 'cookie-parser';
import { existsSync, readFileSync } from 'node:fs';
import type { IncomingMessage, Server as HttpServer, ServerResponse } from 'node:http';
import * as path from 'node:path';
import type { Request, Response, NextFunction } from 'express';
import express from 'express';
import { DataSource } from 'typeorm';
import { AppModule } from './app.module';
import { BenchmarkRegistry } from './benchmarks/benchmark-registry';
import { hiddenSeedSecret, hiddenSeedSecretFile } from './benchmarks/hidden-seed-secret';
import { Clock } from './common/clock';
import { DryftLogger, withRequestId } from './common/logging';
import { Config } from './config/config';
import { openDatabase } from './database/data-source';
import { PublicSnapshots } from './leaderboards/public-snapshots';
import { RateLimiter } from './rate-limits/rate-limiter';
import { useHubSockets } from './socket/hub-io-adapter';
import type { EmbeddedDatabase } from './database/embedded-postgres';

export interface Hub {
  app: INestApplication;
  dataSource: DataSource;
  config: Config;
  url: string;
  /** Stops in order (sockets and HTTP, jobs, database pool, embedded Postgres), saying each step. */
  close(): Promise<void>;
  /** The shutdown step in progress, for a caller that stops waiting. */
  readonly closingStep: string | null;
  /** Last resort when shutdown overruns: the embedded Postgres gets an immediate shutdown. */
  abandon(): void;
}

export interface HubOptions {
  /** Use this database instead of DATABASE_URL / embedded Postgres (tests). */
  databaseUrl?: string;
  registry?: BenchmarkRegistry;
  /**
   * The secret hidden seeds are derived from where a definition gives none (tests); left out, the
   * install's own (DATA_DIR/hidden-seed.secret, made at first start).
   */
  hiddenSeedSecret?: string;
  clock?: Clock;
  /** The levels to log (else LOG_LEVEL's), or false for none. */
  logger?: LogLevel[] | false;
  /** Where JSON log lines go (tests read them back); stdout by default. */
  logWrite?: (line: string) => void;
}

const LEVELS: Record<Config['LOG_LEVEL'], LogLevel[]> = {
  error: ['error'],
  warn: ['error', 'warn'],
  log: ['error', 'warn', 'log'],
  debug: ['error', 'warn', 'log', 'debug', 'verbose'],
};

/** Nest's default levels: what its logger prints before an app sets its own. */
const STARTUP_LEVELS: LogLevel[] = ['log', 'error', 'warn', 'debug', 'verbose', 'fatal'];

/** Builds the whole hub: database (embedded when no URL), migrations, the Nest app and the web. */
export async function createHub(config: Config, options: HubOptions = {}): Promise<Hub> {
  const hubLogger = hubLoggerFor(config, options);
  // Until Nest takes the hub's logger (and its levels), lines go out at Nest's default levels, as
  // they always did (the quick start shows the embedded Postgres's lines under LOG_LEVEL=warn), but
  // already in the chosen format.
  if (hubLogger)
    Logger.overrideLogger(
      new DryftLogger({ format: config.logFormat, levels: STARTUP_LEVELS, write: options.logWrite }),
    );
  const logger = new Logger('Dryft');
  let embedded: EmbeddedDatabase | undefined;
  let url = options.databaseUrl ?? config.DATABASE_URL;
  if (!url) {
    // A development convenience (572 lines, its own binaries): loaded only when no DATABASE_URL is set.
    const { startEmbeddedPostgres } = await import('./database/embedded-postgres.js');
    embedded = await startEmbeddedPostgres(config.dataDir, config.EMBEDDED_PG_PORT, (m) => logger.log(m));
    url = embedded.url;
  }
  try {
    return await buildHub(config, options, url, embedded, logger, hubLogger);
  } catch (err) {
    // A hub that fails to start leaves no Postgres of its own running behind it.
    await embedded?.stop();
    throw err;
  }
}

async function buildHub(
  config: Config,
  options: HubOptions,
  url: string,
  embedded: EmbeddedDatabase | undefined,
  logger: Logger,
  hubLogger: DryftLogger | false,
): Promise<Hub> {
  const dataSource = await openDatabase(url, config.DATABASE_POOL_MAX);
  const loaded = options.registry ?? BenchmarkRegistry.fromDirectory(config.benchmarksDir);
  const registry = loaded.withHiddenSeeds(
    () =>
      options.hiddenSeedSecret ??
      configuredSeedSecret(config, logger) ??
      hiddenSeedSecret(config.dataDir, (m) => logger.log(m)),
  );
  const app = await NestFactory.create<NestExpressApplication>(
    AppModule.forRoot({ config, dataSource, registry, clock: options.clock }),
    {
      logger: hubLogger,
      // Body parsers are registered below: the webhook route needs a larger limit than the rest.
      bodyParser: false,
    },
  );
  app.set('trust proxy', trustProxy(config.TRUST_PROXY));
  app.disable('x-powered-by');
  registerBodyParsers(app);
  app.use(cookieParser());
  serveWeb(app, config.webDir);
  // The gateways' socket.io server (and with REDIS_URL its Redis adapter), made when init connects them.
  await useHubSockets(app, config);
  // No Nest shutdown hooks: main.ts owns SIGTERM/SIGINT and calls close() once, in this order.
  await app.init();
  serveSnapshotsFirst(app, config.logFormat === 'json');
  let closingStep: string | null = null;
  // Each step runs whatever the one before did: a failed step is logged, never a reason to skip the
  // next (a hub whose listen failed must still stop its Postgres).
  const step = async (what: string, work: () => Promise<unknown>) => {
    closingStep = what;
    const started = Date.now();
    try {
      await work();
      logger.log(`shutdown: ${what} (${Date.now() - started} ms)`);
    } catch (err) {
      logger.warn(`shutdown: ${what} failed: ${(err as Error).message ?? String(err)}`);
    }
  };
  return {
    app,
    dataSource,
    config,
    url: '',
    get closingStep() {
      return closingStep;
    },
    async close() {
      const http = app.getHttpServer() as HttpServer;
      // Sockets are closed first (SocketServer); a keep-alive or slow HTTP request gets 1.5 s more.
      const cut = setTimeout(() => http.closeAllConnections?.(), 1_500);
      cut.unref();
      await step('closed the sockets, the HTTP server and the job queue', () => app.close());
      clearTimeout(cut);
      if (dataSource.isInitialized) await step('closed the database pool', () => dataSource.destroy());
      if (embedded) await step('stopped the embedded Postgres', () => embedded.stop());
      closingStep = null;
    },
    abandon() {
      embedded?.abandon();
    },
  };
}

/** The hub's logger: LOG_FORMAT's format, the levels asked for (else LOG_LEVEL's); false for none. */
function hubLoggerFor(config: Config, options: HubOptions): DryftLogger | false {
  if (options.logger === false) return false;
  return new DryftLogger({
    format: config.logFormat,
    levels: options.logger ?? LEVELS[config.LOG_LEVEL],
    write: options.logWrite,
  });
}

/**
 * Public reads whose snapshot is in memory are answered before Express sees the request (no
 * middleware, routing or guards to run for bytes that are already built); everything else, a
 * snapshot not yet built included, goes on to Express and socket.io as before. Reads without
 * credentials are counted first (RATE_LIMIT_PUBLIC, per address, in this replica's memory).
 */
function serveSnapshotsFirst(app: NestExpressApplication, scopeLogLines: boolean): void {
  const http = app.getHttpServer() as HttpServer;
  const snapshots = app.get(PublicSnapshots);
  const limiter = app.get(RateLimiter);
  const others = http.listeners('request') as ((req: IncomingMessage, res: ServerResponse) => void)[];
  http.removeAllListeners('request');
  http.on('request', (req: IncomingMessage, res: ServerResponse) =>
    // Every request gets its id here, the first code that sees it: the response echoes it
    // (X-Request-Id) and, in JSON logs, each line logged while it is handled carries it.
    withRequestId(req, res, scopeLogLines, () => {
      if (limiter.refusePublicRead(req, res)) return;
      if (snapshots.serveFromMemory(req, res)) return;
      for (const listener of others) listener.call(http, req, res);
    }),
  );
}

/**
 * JSON and form bodies, keeping the raw bytes (`req.rawBody`) for signature checks. GitHub's push
 * payloads can reach megabytes, so its webhook route alone accepts up to 25 MB; every other route
 * keeps a 1 MB limit.
 */
function registerBodyParsers(app: NestExpressApplication): void {
  const keepRaw = (req: Request, _res: Response, buf: Buffer) => {
    (req as Request & { rawBody?: Buffer }).rawBody = buf;
  };
  const webhooks = '/api/github/webhooks';
  app.use(webhooks, express.json({ limit: '25mb', verify: keepRaw }));
  const json = express.json({ limit: '1mb', verify: keepRaw });
  const form = express.urlencoded({ extended: true, limit: '1mb', verify: keepRaw });
  app.use((req: Request, res: Response, next: NextFunction) =>
    req.path === webhooks ? next() : json(req, res, next),
  );
  app.use((req: Request, res: Response, next: NextFunction) =>
    req.path === webhooks ? next() : form(req, res, next),
  );
}

/**
 * HIDDEN_SEED_SECRET (or its file) when set. A data folder that holds a different secret of its own
 * is named: its hub derived other hidden prompts, and the set one wins from now on.
 */
function configuredSeedSecret(config: Config, logger: Logger): string | undefined {
  const secret = config.HIDDEN_SEED_SECRET;
  if (!secret) return undefined;
  const file = hiddenSeedSecretFile(config.dataDir);
  if (existsSync(file) && readFileSync(file, 'utf8').trim() !== secret)
    logger.warn(
      `HIDDEN_SEED_SECRET differs from ${file}: hidden workloads without a seed now take prompts derived from HIDDEN_SEED_SECRET (delete the file, or set HIDDEN_SEED_SECRET to its contents, to silence this)`,
    );
  return secret;
}

/** TRUST_PROXY as Express takes it: the list of names, addresses and CIDRs (checked by loadConfig). */
export function trustProxy(value: string): string[] {
  return value
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
}

/** The built SvelteKit app at `/`, with its fallback page for client-side routes. */
function serveWeb(app: NestExpressApplication, webDir: string): void {
  const fallback = ['200.html', 'index.html'].map((f) => path.join(webDir, f)).find((f) => existsSync(f));
  app.use(express.static(webDir, { index: 'index.html', maxAge: '1h', setHeaders: noCacheHtml }));
  app.use((req: Request, res: Response, next: NextFunction) => {
    if (
      req.method !== 'GET' ||
      req.path.startsWith('/api/') ||
      req.path === '/api' ||
      req.path.startsWith('/socket.io')
    )
      return next();
    if (!req.accepts('html')) return next();
    if (!fallback) {
      res
        .status(200)
        .type('text/plain')
        .send('Dryft API is running. The web app is not built: run `npm run build`.');
      return;
    }
    res.setHeader('Cache-Control', 'no-cache');
    res.sendFile(fallback);
  });
}

function noCacheHtml(res: Response, file: string): void {
  if (file.endsWith('.html')) res.setHeader('Cache-Control', 'no-cache');
}
