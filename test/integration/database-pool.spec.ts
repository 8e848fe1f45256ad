import type { Pool } from 'pg';
import { describe, expect, it } from 'vitest';
import { migratedDatabases } from '../support/db';

describe('the API database pool', () => {
  const openDatabase = migratedDatabases();

  it('keeps the connections a burst opened: no new backend (and no new prepare) at the next burst', async () => {
    const ds = await openDatabase();
    const pool = (ds.driver as unknown as { master: Pool }).master;
    // pg-pool's default closes a connection idle for 10 s: the churn that stalled live lines.
    expect(pool.options.idleTimeoutMillis).toBe(0);
    const burst = async () =>
      new Set(
        (
          await Promise.all(
            Array.from({ length: 6 }, () => ds.query('SELECT pg_backend_pid() AS pid FROM pg_sleep(0.05)')),
          )
        ).map((rows: { pid: number }[]) => rows[0].pid),
      );
    const first = await burst();
    expect(first.size).toBe(6);
    expect(pool.idleCount).toBeGreaterThanOrEqual(6);
    const second = await burst();
    expect([...second].every((pid) => first.has(pid))).toBe(true);
  });
});
