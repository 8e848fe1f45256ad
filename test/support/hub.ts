import * as path from 'node:path';
import request from 'supertest';
import type { AddressInfo } from 'node:net';
import type { BenchmarkDefinition } from '@dryft/libs';
import { createHub, Hub } from '../../apps/api/src/bootstrap';
import { BenchmarkRegistry } from '../../apps/api/src/benchmarks/benchmark-registry';
import { Clock } from '../../apps/api/src/common/clock';
import { loadConfig } from '../../apps/api/src/config/config';
import { createTestDatabase } from './db';

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
  opts: { env?: Record<string, string>; definitions?: BenchmarkDefinition[]; clock?: Clock } = {},
): Promise<TestHub> {
  const db = await createTestDatabase();
  const config = loadConfig(
    {
      NODE_ENV: 'test',
      LOG_LEVEL: 'error',
      DATA_DIR: path.join(ROOT, '.data', 'test', `hub-${process.pid}-${Date.now()}`),
      ...opts.env,
    },
    ROOT,
  );
  const hub = await createHub(config, {
    databaseUrl: db.url,
    registry: opts.definitions ? new BenchmarkRegistry(opts.definitions) : undefined,
    clock: opts.clock,
    logger: ['error'],
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
      ...env,
    },
    ROOT,
  );
  const url = (first.dataSource.options as { url: string }).url;
  const hub = await createHub(config, { databaseUrl: url, logger: ['error'] });
  await hub.app.listen(0, '127.0.0.1');
  return { ...hub, baseUrl: `http://127.0.0.1:${(hub.app.getHttpServer().address() as AddressInfo).port}` };
}
