import { DataSource, DataSourceOptions } from 'typeorm';
import { ENTITIES } from './entities';
import { MIGRATIONS } from './migrations';

export function dataSourceOptions(url: string): DataSourceOptions {
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
    // Up to 20 connections, and an idle one is never closed (pg-pool closes it after 10 s by
    // default): with that, the connections a burst of batches opened were closed 10 s later and
    // opened again at the next burst, each a new Postgres backend and a new prepare of the batch
    // statement, on the cores that deliver lines. The bench saw every line stream stall for
    // 100-400 ms ten seconds into the stream (bench/RESULTS.md, 2026-12-01).
    extra: { max: 20, idleTimeoutMillis: 0 },
  };
}

export async function openDatabase(url: string): Promise<DataSource> {
  const ds = new DataSource(dataSourceOptions(url));
  await ds.initialize();
  await ds.runMigrations({ transaction: 'each' });
  return ds;
}
