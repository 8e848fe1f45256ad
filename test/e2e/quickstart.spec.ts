import { ChildProcess, spawn } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import * as net from 'node:net';
import * as path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ROOT } from '../support/hub';

async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = net.createServer().listen(0, '127.0.0.1', () => {
      const port = (s.address() as net.AddressInfo).port;
      s.close(() => resolve(port));
    });
  });
}

/**
 * The README's first line, as a new user runs it (after the build that `npm start` does first):
 * scripts/start.mjs with no DATABASE_URL starts embedded Postgres under DATA_DIR, serves the API and
 * the web on PORT, and keeps its data across a restart.
 */
describe('npm start (embedded Postgres, no DATABASE_URL)', () => {
  const dataDir = mkdtempSync(path.join(ROOT, '.data', 'quickstart-'));
  chmodSync(dataDir, 0o755); // a data folder as `npm start` creates it (mkdtemp makes it 0700)
  let child: ChildProcess | undefined;
  let output = '';

  afterAll(async () => {
    await stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  async function start(port: number) {
    const env = {
      ...process.env,
      PORT: String(port),
      DATA_DIR: dataDir,
      LOCAL_AGENT: 'false',
      NODE_ENV: 'development',
      LOG_LEVEL: 'warn',
    };
    delete env.DATABASE_URL;
    delete env.REDIS_URL;
    child = spawn(process.execPath, [path.join(ROOT, 'scripts/start.mjs')], {
      cwd: ROOT,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child.stdout!.on('data', (d) => (output += d));
    child.stderr!.on('data', (d) => (output += d));
    const deadline = Date.now() + 90_000;
    while (Date.now() < deadline) {
      try {
        const res = await fetch(`http://127.0.0.1:${port}/api/health`);
        if (res.ok) return res.json();
      } catch {
        // not up yet
      }
      if (child.exitCode !== null) throw new Error(`start.mjs exited early:\n${output}`);
      await new Promise((r) => setTimeout(r, 300));
    }
    throw new Error(`no health within 90 s:\n${output}`);
  }

  async function stop() {
    if (!child || child.exitCode !== null) return;
    const exited = new Promise((r) => child!.once('exit', r));
    child.kill('SIGINT');
    await exited;
  }

  it('serves /api/health and the web, and keeps data across a restart', async () => {
    const port = await freePort();
    expect(await start(port)).toMatchObject({ status: 'ok', db: 'up' });
    const base = `http://127.0.0.1:${port}`;
    const signIn = await fetch(`${base}/api/auth/dev`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ login: 'first-user' }),
    });
    expect(signIn.status).toBe(200);
    const cookies = signIn.headers
      .getSetCookie()
      .map((c) => c.split(';')[0])
      .join('; ');
    const { csrfToken } = await signIn.json();
    const created = await fetch(`${base}/api/teams`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', cookie: cookies, 'x-csrf-token': csrfToken },
      body: JSON.stringify({ name: 'Persistent' }),
    });
    expect(created.status).toBe(201);
    const page = await fetch(`${base}/`, { headers: { accept: 'text/html' } });
    expect(page.status).toBe(200);
    // Only inside the data folder: its socket, no TCP (docs/RELIABILITY.md).
    expect(output).toMatch(/Embedded Postgres on the socket in .*postgres-socket \(no TCP/);

    await stop();
    const port2 = await freePort();
    await start(port2);
    const me = await fetch(`http://127.0.0.1:${port2}/api/me`, { headers: { cookie: cookies } });
    expect(me.status).toBe(200);
    expect((await me.json()).teams.map((t: { name: string }) => t.name)).toEqual(['Persistent']);
  });
});
