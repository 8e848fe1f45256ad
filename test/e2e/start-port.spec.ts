import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { gunzipSync } from 'node:zlib';
import { afterAll, describe, expect, it } from 'vitest';
import { readTar } from '@dryft/libs';
import { createTestDatabase } from '../support/db';
import { ROOT } from '../support/hub';

/**
 * `npm start` (scripts/start.mjs) with PORT=0: the hub gets a real free port, and the line it prints,
 * the API's own "listening" line and the template it hands out all name that port (issue 31: the
 * starter knows its hub). Needs the API build (`npm run build`).
 */
const MAIN = path.join(ROOT, 'apps/api/dist/main.js');

describe.skipIf(!existsSync(MAIN))('npm start on PORT=0', () => {
  let child: ChildProcess | undefined;
  let db: Awaited<ReturnType<typeof createTestDatabase>> | undefined;
  const data = mkdtempSync(path.join(tmpdir(), 'dryft-start-port-'));

  afterAll(async () => {
    if (child && child.exitCode === null) {
      const exited = new Promise((r) => child!.once('exit', r));
      child.kill('SIGINT');
      await exited;
    }
    await db?.drop();
    rmSync(data, { recursive: true, force: true });
  });

  it('prints and uses the port it really got', async () => {
    db = await createTestDatabase();
    child = spawn(process.execPath, [path.join(ROOT, 'scripts/start.mjs')], {
      cwd: ROOT,
      env: {
        PATH: process.env.PATH,
        PORT: '0',
        DATABASE_URL: db.url,
        DATA_DIR: data,
        LOCAL_AGENT: 'false',
        LOG_LEVEL: 'warn',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout!.on('data', (c: Buffer) => (out += c.toString()));
    child.stderr!.on('data', (c: Buffer) => (out += c.toString()));
    await expect.poll(() => out, { timeout: 90_000, interval: 200 }).toMatch(/Dryft is up: open \S+/);
    const port = out.match(/Dryft is up: open http:\/\/localhost:(\d+)/)?.[1];
    expect(port, out).toBeTruthy();
    expect(port).not.toBe('0');
    expect(out).toContain(`Dryft hub listening on http://localhost:${port} (port ${port})`);
    expect((await fetch(`http://127.0.0.1:${port}/api/health`)).ok).toBe(true);
    // The template names the address the request came to (no PUBLIC_URL set, development).
    const res = await fetch(`http://127.0.0.1:${port}/api/benchmarks/toy-decode/template`);
    expect(res.status).toBe(200);
    let settings = '';
    readTar(gunzipSync(Buffer.from(await res.arrayBuffer())), (e) => {
      if (e.name === 'toy-decode/dryft.json') settings = Buffer.from(e.content).toString('utf8');
    });
    expect(JSON.parse(settings).hub).toBe(`http://127.0.0.1:${port}`);
  });
});
