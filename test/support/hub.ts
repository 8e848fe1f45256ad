import * as path from 'node:path';
import request from 'supertest';
import type { AddressInfo } from 'node:net';
import type { LogLevel } from '@nestjs/common';
import type { BenchmarkDefinition } from '@dryft/libs';
import { createHub, Hub } from '../../apps/api/src/bootstrap';
import { BenchmarkRegistry } from '../../apps/api/src/benchmarks/benchmark-registry';
import { Clock } from '../../apps/api/src/common/clock';
import { loadConfig } from '../../apps/api/src/config/config';
import { createTestDatabase } from './db';
import { GENEROUS_RATE_LIMITS } from './rate-limits';

export const ROOT = path.resolve(__dirname, '../..');

export interface TestHub extends Hub {
  baseUrl: string;
  http: ReturnType<typeof request>;
}

/**
 * The real Nest app on a fresh real database, listening on a loopback port (for socket.io clients)
 * and wrapped in supertest.
 */
export async function startTestHub(
  opts: {
    env?: Record<string, string>;
    definitions?: BenchmarkDefinition[];
    clock?: Clock;
    /** The secret hidden seeds are derived from (else the hub's DATA_DIR/hidden-seed.secret). */
    hiddenSeedSecret?: string;
    /** A database of the test's own (an OwnPostgres it stops), used as it is and not dropped. */
    databaseUrl?: string;
    /** The levels logged (`error` only by default) and, for JSON logs, where the lines go. */
    logLevels?: LogLevel[];
    logWrite?: (line: string) => void;
  } = {},
): Promise<TestHub> {
  const db = opts.databaseUrl
    ? { url: opts.databaseUrl, drop: async () => undefined }
    : await createTestDatabase();
  const config = loadConfig(
    {
      NODE_ENV: 'test',
      LOG_LEVEL: 'error',
      DATA_DIR: path.join(ROOT, '.data', 'test', `hub-${process.pid}-${Date.now()}`),
      ...GENEROUS_RATE_LIMITS,
      ...opts.env,
    },
    ROOT,
  );
  const hub = await createHub(config, {
    databaseUrl: db.url,
    registry: opts.definitions ? new BenchmarkRegistry(opts.definitions) : undefined,
    clock: opts.clock,
    hiddenSeedSecret: opts.hiddenSeedSecret,
    logger: opts.logLevels ?? ['error'],
    logWrite: opts.logWrite,
  });
  await hub.app.listen(0, '127.0.0.1');
  const port = (hub.app.getHttpServer().address() as AddressInfo).port;
  const baseUrl = `http://127.0.0.1:${port}`;
  return {
    ...hub,
    baseUrl,
    http: request(hub.app.getHttpServer()),
    async close() {
      await hub.close();
      await db.drop();
    },
  };
}

/** A second API replica on `first`'s database (and `env`'s Redis): the scale-out tests' replica B. */
export async function startSecondReplica(
  first: TestHub,
  env: Record<string, string>,
): Promise<Hub & { baseUrl: string }> {
  const config = loadConfig(
    {
      NODE_ENV: 'test',
      LOG_LEVEL: 'error',
      DATA_DIR: path.join(ROOT, '.data', 'test', `hub-b-${process.pid}-${Date.now()}`),
      ...GENEROUS_RATE_LIMITS,
      ...env,
    },
    ROOT,
  );
  const url = (first.dataSource.options as { url: string }).url;
  const hub = await createHub(config, { databaseUrl: url, logger: ['error'] });
  await hub.app.listen(0, '127.0.0.1');
  return { ...hub, baseUrl: `http://127.0.0.1:${(hub.app.getHttpServer().address() as AddressInfo).port}` };
}
