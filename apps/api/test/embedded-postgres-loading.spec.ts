import { describe, expect, it, vi } from 'vitest';
import type { Config } from '../src/config/config';

// Records whether the embedded Postgres module was loaded at all, and stands in for it when it is.
const loading = vi.hoisted(() => ({ loaded: false, started: [] as string[] }));
vi.mock('../src/database/embedded-postgres', () => {
  loading.loaded = true;
  return {
    startEmbeddedPostgres: async (dataDir: string) => {
      loading.started.push(dataDir);
      throw new Error('stand-in: no Postgres started');
    },
  };
});

/** embedded-postgres.ts is a development convenience: the hub loads it only when it needs it. */
describe('embedded Postgres is loaded only without DATABASE_URL', () => {
  // Importing the whole hub (Nest, every domain) through the transform takes seconds.
  it('is not loaded by importing the hub', { timeout: 120_000 }, async () => {
    await import('../src/bootstrap');
    expect(loading.loaded).toBe(false);
  });

  it(
    'is loaded, and started in the data folder, when no DATABASE_URL is set',
    { timeout: 120_000 },
    async () => {
      const { createHub } = await import('../src/bootstrap');
      const config = { DATABASE_URL: undefined, dataDir: '/tmp/dryft-no-such-dir', EMBEDDED_PG_PORT: 0 };
      await expect(createHub(config as unknown as Config)).rejects.toThrow('stand-in: no Postgres started');
      expect(loading.loaded).toBe(true);
      expect(loading.started).toEqual(['/tmp/dryft-no-such-dir']);
    },
  );
});
