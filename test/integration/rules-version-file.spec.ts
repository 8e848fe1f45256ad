import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { BenchmarkDefinition, PublicBenchmark } from '@dryft/libs';
import { loadBenchmarkDefinitions } from '@dryft/libs/node';
import { createTestDatabase } from '../support/db';
import { startTestHub } from '../support/hub';

const ROOT = path.resolve(__dirname, '../..');
const shipped = () => loadBenchmarkDefinitions(path.join(ROOT, 'config/benchmarks'));
/** The shipped definitions with qwen3-4b-decode's file at `version`. */
const withQwenAt = (version: number): BenchmarkDefinition[] =>
  shipped().map((d) => (d.id === 'qwen3-4b-decode' ? { ...d, rulesVersion: version } : d));

async function qwen(baseUrl: string): Promise<PublicBenchmark> {
  const res = await fetch(`${baseUrl}/api/benchmarks/qwen3-4b-decode`);
  expect(res.status).toBe(200);
  return (await res.json()) as PublicBenchmark;
}

// A hub keeps the settings it stored when it first saw a benchmark; a rules version raised in the
// definition file (a change of what runs measure, such as samples.referenceTokensPct, which changes
// K) must still reach a hub that was running the older file, or the old K would score runs under the
// new rules.
describe('a rules version raised in the definition file', () => {
  let db: Awaited<ReturnType<typeof createTestDatabase>>;
  afterAll(async () => db?.drop());

  it('reaches a hub that stored the older one, never lowers an organizer bump, and says why', async () => {
    db = await createTestDatabase();
    const older = await startTestHub({ databaseUrl: db.url, definitions: withQwenAt(1) });
    expect((await qwen(older.baseUrl)).rulesVersion).toBe(1);
    await older.close();

    const upgraded = await startTestHub({ databaseUrl: db.url, definitions: withQwenAt(4) });
    const view = await qwen(upgraded.baseUrl);
    expect(view.rulesVersion).toBe(4);
    expect(view.rulesChangedReason).toContain('moved to rules version 4');
    expect(view.rulesChangedAt).toBeTruthy();
    await upgraded.close();

    // An organizer's bump above the file's stays, and a file at or below the stored version changes nothing.
    const again = await startTestHub({ databaseUrl: db.url, definitions: withQwenAt(9) });
    expect((await qwen(again.baseUrl)).rulesVersion).toBe(9);
    await again.close();
    const back = await startTestHub({ databaseUrl: db.url, definitions: withQwenAt(4) });
    expect((await qwen(back.baseUrl)).rulesVersion).toBe(9);
    await back.close();
  });
});
