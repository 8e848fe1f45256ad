import { DataSource, DataSourceOptions } from 'typeorm';
import { ENTITIES } from './entities';
import { MIGRATIONS } from './migrations';

/** The pool size of an API process when DATABASE_POOL_MAX is unset (config.ts holds the same default). */
export const DEFAULT_POOL_MAX = 20;

export function dataSourceOptions(url: string, poolMax = DEFAULT_POOL_MAX): DataSourceOptions {
  return {
    type: 'postgres',
    url,
    entities: ENTITIES,
    migrations: MIGRATIONS,
    // Never synchronize: the checked-in migrations are the schema.
    synchronize: false,
    migrationsRun: false,
    // gen_random_uuid() is built into Postgres 13+: no extension to install, no superuser needed.
    uuidExtension: 'pgcrypto',
    installExtensions: false,
    // Up to DATABASE_POOL_MAX connections (20 by default), and an idle one is never closed (pg-pool closes it after 10 s by
    // default): with that, the connections a burst of batches opened were closed 10 s later and
    // opened again at the next burst, each a new Postgres backend and a new prepare of the batch
    // statement, on the cores that deliver lines. The bench saw every line stream stall for
    // 100-400 ms ten seconds into the stream (bench/RESULTS.md, 2026-12-01).
    extra: { max: poolMax, idleTimeoutMillis: 0 },
  };
}

/**
 * Key of the session-level Postgres advisory lock every API process holds while it migrates (any
 * constant unique to Dryft; `hashtext('dryft:migrations')` would do as well but needs a query).
 */
export const MIGRATION_LOCK_KEY = 7_294_110_533_001;

export async function openDatabase(url: string, poolMax = DEFAULT_POOL_MAX): Promise<DataSource> {
  const ds = new DataSource(dataSourceOptions(url, poolMax));
  await ds.initialize();
  try {
    await migrateLocked(ds);
  } catch (err) {
    await ds.destroy().catch(() => undefined);
    throw err;
  }
  return ds;
}

/**
 * Runs the pending migrations while holding a Postgres advisory lock, so any number of replicas
 * can start at once on an empty or an older database: the first one to take the lock migrates,
 * the others wait for it and then find nothing pending (TypeORM itself has no lock: two processes
 * both saw a migration pending and the second failed on "relation already exists"). The lock is
 * held by one dedicated connection and released on it, or by Postgres when that connection dies.
 */
export async function migrateLocked(ds: DataSource): Promise<void> {
  const runner = ds.createQueryRunner();
  await runner.connect();
  try {
    await runner.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK_KEY]);
    try {
      await ds.runMigrations({ transaction: 'each' });
    } finally {
      await runner.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK_KEY]);
    }
  } finally {
    await runner.release();
  }
}
