import type PgBoss from 'pg-boss';
import type { EntityManager } from 'typeorm';

/**
 * pg-boss's `db` option bound to the caller's TypeORM transaction: a job sent through it commits with
 * the row it belongs to, or not at all (so a crash never leaves a row that no job will pick up).
 */
export function transactionDb(manager: EntityManager): PgBoss.Db {
  const runner = manager.queryRunner;
  if (!runner) throw new Error('enqueue needs a transaction');
  return {
    executeSql: async (text, values) => {
      const result = await runner.query(text, values, true);
      return { rows: result.records as unknown[] };
    },
  };
}
