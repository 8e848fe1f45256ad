import type { Pool, QueryResultRow } from 'pg';
import type { DataSource } from 'typeorm';
import type { PostgresDriver } from 'typeorm/driver/postgres/PostgresDriver';

/**
 * A statement the hub runs on every stored batch, prepared once per pooled connection under `name`
 * (Postgres parses and plans it once, not per batch), outside any transaction: it is its own. Through
 * the pool TypeORM owns, so the pool's limits, timeouts and outage handling are the same.
 */
export async function preparedQuery<Row extends QueryResultRow>(
  dataSource: DataSource,
  name: string,
  text: string,
  values: unknown[],
): Promise<Row[]> {
  const pool = (dataSource.driver as PostgresDriver).master as Pool;
  return (await pool.query<Row>({ name, text, values })).rows;
}
