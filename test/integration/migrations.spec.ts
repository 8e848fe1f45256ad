import { describe, expect, it } from 'vitest';
import { MIGRATIONS } from '../../apps/api/src/database/migrations';
import { chunkLines } from '../../apps/api/src/runs/run-log';
import { migratedDatabases } from '../support/db';

describe('migrations', () => {
  const openDatabase = migratedDatabases();

  it('describe exactly the entities (no pending schema change)', async () => {
    const ds = await openDatabase();
    const pending = await ds.driver.createSchemaBuilder().log();
    const statements = pending.upQueries.map((q) => q.query);
    // If this fails: run `npm run migration:generate -- Name` and commit the new migration.
    expect(statements).toEqual([]);
  });

  it('are ordered by timestamp and apply on an empty database, then revert cleanly', async () => {
    const stamps = MIGRATIONS.map((m) => Number(/(\d{13})$/.exec(m.name)?.[1]));
    expect([...stamps].sort((a, b) => a - b)).toEqual(stamps);
    const ds = await openDatabase();
    for (let i = 0; i < MIGRATIONS.length; i++) await ds.undoLastMigration();
    const tables: { n: string }[] = await ds.query(
      `SELECT count(*)::int AS n FROM information_schema.tables WHERE table_schema = 'public' AND table_name <> 'migrations'`,
    );
    expect(Number(tables[0].n)).toBe(0);
  });

  it('move log lines stored as rows into chunks in seq order, and back', async () => {
    const ds = await openDatabase();
    // Back to before LogChunks (a row per line), undoing any migration that came after it too.
    while (!(await ds.query("SELECT to_regclass('run_logs') AS t"))[0].t) await ds.undoLastMigration();
    const [a, b] = ['0b7c1d3e-1111-4222-8333-444455556666', '0b7c1d3e-1111-4222-8333-777788889999'];
    const texts = ['tab\there, "quotes", \\ and \\N', 'new\nline', 'ünïcödé 中文 🚀', ''];
    const rows = [
      ...Array.from({ length: 2_500 }, (_, i) => [
        a,
        2_500 - i,
        1_764_500_000_000 + i,
        'out',
        `line ${2_500 - i}`,
      ]),
      ...texts.map((t, i) => [b, 10 + i * 3, 7, i % 2 ? 'harness' : 'system', t]),
    ];
    for (const r of rows)
      await ds.query('INSERT INTO run_logs (run_id, seq, ts, stream, text) VALUES ($1, $2, $3, $4, $5)', r);
    await ds.runMigrations({ transaction: 'each' });
    const chunks: {
      run_id: string;
      first_seq: number;
      last_seq: number;
      line_count: number;
      lines: string;
    }[] = await ds.query('SELECT * FROM run_log_chunks ORDER BY run_id, last_seq');
    expect(chunks.map((c) => [c.run_id, c.first_seq, c.last_seq, c.line_count])).toEqual([
      [a, 1, 999, 999],
      [a, 1_000, 1_999, 1_000],
      [a, 2_000, 2_500, 501],
      [b, 10, 19, 4],
    ]);
    const linesOf = (run: string) =>
      chunks.filter((c) => c.run_id === run).flatMap((c) => chunkLines(c.lines));
    expect(linesOf(a).map((l) => l.seq)).toEqual(Array.from({ length: 2_500 }, (_, i) => i + 1));
    expect(linesOf(a)[0]).toEqual({ seq: 1, ts: 1_764_500_002_499, stream: 'out', text: 'line 1' });
    expect(linesOf(b)).toEqual(
      texts.map((text, i) => ({ seq: 10 + i * 3, ts: 7, stream: i % 2 ? 'harness' : 'system', text })),
    );
    while (!(await ds.query("SELECT to_regclass('run_logs') AS t"))[0].t) await ds.undoLastMigration();
    const back: unknown[][] = (
      await ds.query(
        'SELECT run_id, seq, ts::float8 AS ts, stream, text FROM run_logs ORDER BY run_id, seq DESC',
      )
    ).map((r: { run_id: string; seq: number; ts: number; stream: string; text: string }) => [
      r.run_id,
      r.seq,
      r.ts,
      r.stream,
      r.text,
    ]);
    expect(back).toEqual([...rows.slice(0, 2_500), ...[...rows.slice(2_500)].reverse()]);
  });
});
