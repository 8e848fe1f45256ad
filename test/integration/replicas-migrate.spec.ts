import { mkdirSync, rmSync } from 'node:fs';
import * as path from 'node:path';
import { Client } from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { openDatabase } from '../../apps/api/src/database/data-source';
import { MIGRATIONS } from '../../apps/api/src/database/migrations';
import { ApiProc, startApi, stopProc } from '../support/agent-helpers';
import { createTestDatabase } from '../support/db';
import { freePort, ROOT } from '../support/quickstart';

/**
 * Replicas of one hub started at the same moment (a deploy, a restart of every container) on a
 * database that is empty or a few migrations behind: every one comes up, and each migration is
 * applied exactly once (runMigrations runs under a Postgres advisory lock).
 */
describe('API replicas started together', () => {
  const procs: ApiProc[] = [];
  const drops: (() => Promise<void>)[] = [];
  const dataDir = path.join(ROOT, '.data', 'test', `replicas-migrate-${process.pid}-${Date.now()}`);
  mkdirSync(dataDir, { recursive: true });
  afterAll(async () => {
    for (const p of procs) await stopProc(p);
    for (const drop of drops) await drop().catch(() => undefined);
    rmSync(dataDir, { recursive: true, force: true });
  });

  async function startTogether(
    dbUrl: string,
    n: number,
    round: string,
  ): Promise<PromiseSettledResult<ApiProc>[]> {
    const ports = await Promise.all(Array.from({ length: n }, () => freePort()));
    const started = await Promise.allSettled(
      ports.map((port, i) => startApi({ dbUrl, port, dataDir: path.join(dataDir, `${round}-${i}`) })),
    );
    for (const s of started) if (s.status === 'fulfilled') procs.push(s.value);
    return started;
  }

  async function appliedMigrations(dbUrl: string): Promise<string[]> {
    const c = new Client({ connectionString: dbUrl });
    await c.connect();
    try {
      const rows: { rows: { name: string }[] } = await c.query('SELECT name FROM migrations ORDER BY id');
      return rows.rows.map((r) => r.name);
    } finally {
      await c.end();
    }
  }

  const failures = (started: PromiseSettledResult<ApiProc>[]) =>
    started.flatMap((s) =>
      s.status === 'rejected' ? [String((s.reason as Error).message).slice(0, 2_000)] : [],
    );

  it('on an empty database: three processes at once all come up, every migration applied once', async () => {
    for (let round = 0; round < 2; round++) {
      const db = await createTestDatabase();
      drops.push(db.drop);
      const started = await startTogether(db.url, 3, `empty${round}`);
      expect(failures(started)).toEqual([]);
      expect(await appliedMigrations(db.url)).toEqual(MIGRATIONS.map((m) => m.name));
      for (const s of started) if (s.status === 'fulfilled') await stopProc(s.value);
    }
  }, 120_000);

  it('on an older database (the last two migrations pending): both come up, each pending one applied once', async () => {
    const db = await createTestDatabase();
    drops.push(db.drop);
    const ds = await openDatabase(db.url);
    await ds.undoLastMigration({ transaction: 'each' });
    await ds.undoLastMigration({ transaction: 'each' });
    await ds.destroy();
    expect(await appliedMigrations(db.url)).toEqual(MIGRATIONS.slice(0, -2).map((m) => m.name));
    const started = await startTogether(db.url, 2, 'old');
    expect(failures(started)).toEqual([]);
    expect(await appliedMigrations(db.url)).toEqual(MIGRATIONS.map((m) => m.name));
  }, 120_000);
});
