import { Controller, Get, Inject, Logger, Res } from '@nestjs/common';
import type { Response } from 'express';
import { DataSource } from 'typeorm';
import { DATABASE_RETRY_AFTER_SECONDS } from '../common/database-errors';
import { Public } from '../common/principal';
import { CONFIG, Config } from '../config/config';
import { SocketServer } from '../socket/socket-server';

/** A readiness check that has not answered by then counts as failed: a probe must get an answer. */
const CHECK_TIMEOUT_MS = 2_000;

/** Each check's state on `/api/health/ready`: `up`, `down: <why>`, or `not configured`. */
export type CheckState = string;

@Controller('api/health')
export class HealthController {
  private readonly logger = new Logger('Health');

  constructor(
    private readonly dataSource: DataSource,
    private readonly sockets: SocketServer,
    @Inject(CONFIG) private readonly config: Config,
  ) {}

  /** The original health route (docker health checks and tests read it): the database, pinged. */
  @Public()
  @Get()
  async health(@Res({ passthrough: true }) res: Response) {
    let db: 'up' | 'down' = 'up';
    try {
      await this.dataSource.query('SELECT 1');
    } catch {
      db = 'down';
    }
    if (db === 'down') res.status(503).setHeader('Retry-After', String(DATABASE_RETRY_AFTER_SECONDS));
    return { status: db === 'up' ? 'ok' : 'degraded', db, version: this.config.version };
  }

  /** Liveness: the process answers. Nothing outside it is checked (a restart would not fix that). */
  @Public()
  @Get('live')
  live() {
    return { status: 'ok', version: this.config.version };
  }

  /**
   * Readiness: this replica can serve traffic. 200 when every check is up; else 503 naming each
   * failing check and why, so a load balancer takes the replica out until it is back.
   */
  @Public()
  @Get('ready')
  async ready(@Res({ passthrough: true }) res: Response) {
    const [database, migrations, redis] = await Promise.all([
      check(async () => {
        await this.dataSource.query('SELECT 1');
      }),
      check(async () => {
        const pending = await this.dataSource.showMigrations();
        if (pending) throw new Error('migrations are pending (restart the API to apply them)');
      }),
      check(async () => {
        const problem = await this.sockets.redisProblem(CHECK_TIMEOUT_MS);
        if (problem === undefined) return 'not configured';
        if (problem) throw new Error(problem);
      }),
    ]);
    const socketProblem = this.sockets.socketsProblem();
    const checks: Record<string, CheckState> = {
      database,
      migrations,
      redis,
      sockets: socketProblem ? `down: ${socketProblem}` : 'up',
    };
    const failing = Object.keys(checks).filter((name) => checks[name].startsWith('down'));
    if (!failing.length) return { status: 'ok', checks, version: this.config.version };
    const message = `not ready: ${failing.map((name) => `${name} ${checks[name]}`).join('; ')}`;
    this.logger.warn(message);
    res.status(503).setHeader('Retry-After', String(DATABASE_RETRY_AFTER_SECONDS));
    return { status: 'not_ready', failing, checks, message, version: this.config.version };
  }
}

/** Runs one check under the timeout: `up` (or what it returned), else `down: <why>`. */
async function check(work: () => Promise<string | void>): Promise<CheckState> {
  let timer: NodeJS.Timeout | undefined;
  // A check that loses the race to the timeout may still fail later: handled here, not left as an
  // unhandled rejection of the process.
  const running = work();
  running.catch(() => undefined);
  try {
    const state = await Promise.race([
      running,
      new Promise<never>((_, reject) => {
        timer = setTimeout(
          () => reject(new Error(`no answer within ${CHECK_TIMEOUT_MS} ms`)),
          CHECK_TIMEOUT_MS,
        );
      }),
    ]);
    return state ?? 'up';
  } catch (err) {
    return `down: ${(err as Error).message}`;
  } finally {
    clearTimeout(timer);
  }
}
