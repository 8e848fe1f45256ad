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
    extra: { max: 20 },
  };
}

export async function openDatabase(url: string): Promise<DataSource> {
  const ds = new DataSource(dataSourceOptions(url));
  await ds.initialize();
  await ds.runMigrations({ transaction: 'each' });
  return ds;
}
