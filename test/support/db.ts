import { randomBytes } from 'node:crypto';
import { Client } from 'pg';
import type { DataSource } from 'typeorm';
import { afterAll, inject } from 'vitest';

/** A fresh, empty database on the test server; dropped by `drop()`. */
export async function createTestDatabase(): Promise<{ url: string; drop: () => Promise<void> }> {
  const serverUrl = inject('serverDatabaseUrl');
  const name = `dryft_test_${Date.now()}_${randomBytes(3).toString('hex')}`;
  const admin = new Client({ connectionString: serverUrl });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    async drop() {
      const c = new Client({ connectionString: serverUrl });
      await c.connect();
      await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await c.end();
    },
  };
}

/**
 * A fresh database with every migration applied, through the API's own DataSource (its pool
 * settings too); `close()` ends the DataSource if it is still open and drops the database.
 */
export async function openMigratedDatabase(): Promise<{ ds: DataSource; close: () => Promise<void> }> {
  // Loaded here, not at the top: the fault tests import this file for createTestDatabase alone.
  const { openDatabase } = await import('../../apps/api/src/database/data-source');
  const db = await createTestDatabase();
  const ds = await openDatabase(db.url);
  return {
    ds,
    async close() {
      if (ds.isInitialized) await ds.destroy();
      await db.drop();
    },
  };
}

/**
 * For a describe block: each call of the returned function opens a fresh migrated database
 * ({@link openMigratedDatabase}), closed and dropped after the block's tests.
 */
export function migratedDatabases(): () => Promise<DataSource> {
  const closes: (() => Promise<void>)[] = [];
  afterAll(async () => {
    for (const close of closes) await close();
  });
  return async () => {
    const { ds, close } = await openMigratedDatabase();
    closes.push(close);
    return ds;
  };
}
