import { afterAll, describe, expect, it } from 'vitest';
import { openDatabase } from '../../apps/api/src/database/data-source';
import { MIGRATIONS } from '../../apps/api/src/database/migrations';
import { createTestDatabase } from '../support/db';

describe('migrations', () => {
  const cleanups: (() => Promise<void>)[] = [];
  afterAll(async () => {
    for (const c of cleanups) await c();
  });

  it('describe exactly the entities (no pending schema change)', async () => {
    const db = await createTestDatabase();
    const ds = await openDatabase(db.url);
    cleanups.push(async () => {
      await ds.destroy();
      await db.drop();
    });
    const pending = await ds.driver.createSchemaBuilder().log();
    const statements = pending.upQueries.map((q) => q.query);
    // If this fails: run `npm run migration:generate -- Name` and commit the new migration.
    expect(statements).toEqual([]);
  });

  it('are ordered by timestamp and apply on an empty database, then revert cleanly', async () => {
    const stamps = MIGRATIONS.map((m) => Number(/(\d{13})$/.exec(m.name)?.[1]));
    expect([...stamps].sort((a, b) => a - b)).toEqual(stamps);
    const db = await createTestDatabase();
    const ds = await openDatabase(db.url);
    cleanups.push(async () => {
      if (ds.isInitialized) await ds.destroy();
      await db.drop();
    });
    for (let i = 0; i < MIGRATIONS.length; i++) await ds.undoLastMigration();
    const tables: { n: string }[] = await ds.query(
      `SELECT count(*)::int AS n FROM information_schema.tables WHERE table_schema = 'public' AND table_name <> 'migrations'`,
    );
    expect(Number(tables[0].n)).toBe(0);
  });
});
