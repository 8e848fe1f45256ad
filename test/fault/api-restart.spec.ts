import { mkdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import * as path from 'node:path';
import { spawn } from 'node:child_process';
import { Client } from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  AgentProc,
  ApiProc,
  HttpUser,
  RunWatcher,
  startApi,
  stopProc,
  terminal,
  toyEngineWith,
  until,
} from '../support/agent-helpers';
import { createTestDatabase } from '../support/db';
import { AGENT_MAIN, freePort, ROOT } from '../support/quickstart';

/**
 * `npm start`'s pair: the API and its `--local` agent (token from LOCAL_AGENT_TOKEN_FILE in the data
 * folder). The API restarts under a streaming run, gracefully (SIGTERM) and by `kill -9`; the agent
 * must stay, reconnect with the same identity, and the run must finish with every line.
 */
const TICKS = 300;
const ticks = (marker: string) => `
import time as _t
for _i in range(${TICKS}):
    print(f"tick ${marker} {_i}", flush=True)
    _t.sleep(0.02)
`;

describe('API restarts under a local agent run', () => {
  let db: { url: string; drop: () => Promise<void> };
  let port: number;
  let dataDir: string;
  let tokenFile: string;
  let api: ApiProc;
  let agent: AgentProc;
  let owner: HttpUser;

  const boot = () =>
    startApi({ dbUrl: db.url, port, dataDir, env: { LOCAL_AGENT_TOKEN_FILE: tokenFile, LOG_LEVEL: 'log' } });

  beforeAll(async () => {
    db = await createTestDatabase();
    port = await freePort();
    dataDir = path.join(ROOT, '.data', 'test', `fault-restart-${process.pid}-${Date.now()}`);
    mkdirSync(dataDir, { recursive: true });
    tokenFile = path.join(dataDir, 'local-agent.token');
    api = await boot();
    const child = spawn(process.execPath, [AGENT_MAIN, '--local'], {
      cwd: ROOT,
      env: {
        ...process.env,
        PORT: String(port),
        DRYFT_API_URL: api.url,
        DRYFT_AGENT_TOKEN_FILE: tokenFile,
        DRYFT_AGENT_WORK_DIR: path.join(dataDir, 'agent-work'),
        DRYFT_AGENT_TEST_HOOKS: '1',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout!.on('data', (c: Buffer) => (out += c.toString('utf8')));
    child.stderr!.on('data', (c: Buffer) => (out += c.toString('utf8')));
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    agent = { child, output: () => out, exited, workDir: path.join(dataDir, 'agent-work') };
    await until('local agent connected', () => /connected to .* as "local"/.test(out) || null, 60_000);
    owner = await HttpUser.signIn(api.url, 'restart-owner');
    await owner.createTeam();
  });

  afterAll(async () => {
    await stopProc(agent, 'SIGKILL');
    await stopProc(api);
    await db?.drop().catch(() => undefined);
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  });

  const tickLines = async (runId: string, marker: string) =>
    (await owner.allLogs(runId))
      .filter((l) => l.text.startsWith(`tick ${marker} `))
      .map((l) => Number(l.text.split(' ')[2]));

  for (const signal of ['SIGTERM', 'SIGKILL'] as const) {
    it(`the API restarts (${signal}) mid-run: the local agent stays, the run succeeds with every line`, async () => {
      const token = readFileSync(tokenFile, 'utf8');
      expect(statSync(tokenFile).mode & 0o777).toBe(0o600);
      const marker = `${signal.toLowerCase()}${Date.now()}`;
      const run = await owner.startRun(await owner.upload(await toyEngineWith(ticks(marker))));
      await until('ticking', async () => (await tickLines(run.id, marker)).length > 30, 60_000);

      const downAt = Date.now();
      await stopProc(api, signal);
      api = await boot();
      const upMs = Date.now() - downAt;
      // Same identity: the token file was kept, and the agent did not exit.
      expect(readFileSync(tokenFile, 'utf8')).toBe(token);
      expect(api.output()).toMatch(/local agent token kept/);
      await until('agent reconnected', () =>
        agent.output().split(/connected to .* as "local"/).length > 2 ? true : null,
      );
      const reconnectMs = Date.now() - downAt;

      const done = await owner.waitFor(run.id, terminal, 120_000);
      expect(done.status, `${agent.output()}\n${api.output()}`).toBe('succeeded');
      expect(agent.child.exitCode).toBeNull();
      expect(agent.output()).not.toMatch(/agent stopped|not known to this hub/);
      // Lines printed = lines stored = lines delivered, once each and in order.
      const stored = await tickLines(run.id, marker);
      expect(stored).toEqual([...Array(TICKS).keys()]);
      const watcher = new RunWatcher(api.url, { cookie: owner.cookie });
      try {
        expect((await watcher.join(run.id)).ok).toBe(true);
        await until('watcher has every line', () => watcher.lastSeq >= done.lastLogSeq || null, 30_000);
        watcher.assertContiguous();
        const delivered = watcher.lines
          .filter((l) => l.text.startsWith(`tick ${marker} `))
          .map((l) => Number(l.text.split(' ')[2]));
        expect(delivered).toEqual(stored);
      } finally {
        watcher.close();
      }
      console.log(
        `[fault] API ${signal} restart: hub back in ${upMs} ms, local agent reconnected after ${reconnectMs} ms`,
      );
    });
  }

  it('the token file is replaced while the API is down: the agent takes the new token and finishes its run', async () => {
    const marker = `newtoken${Date.now()}`;
    const run = await owner.startRun(await owner.upload(await toyEngineWith(ticks(marker))));
    await until('ticking', async () => (await tickLines(run.id, marker)).length > 30, 60_000);
    const old = readFileSync(tokenFile, 'utf8');
    await stopProc(api, 'SIGKILL');
    rmSync(tokenFile);
    api = await boot();
    expect(api.output()).toMatch(/local agent token written/);
    expect(readFileSync(tokenFile, 'utf8')).not.toBe(old);
    const done = await owner.waitFor(run.id, terminal, 120_000);
    expect(done.status, `${agent.output()}\n${api.output()}`).toBe('succeeded');
    expect(agent.output()).toMatch(/holds a new one: reconnecting with it/);
    expect(agent.child.exitCode).toBeNull();
    expect(await tickLines(run.id, marker)).toEqual([...Array(TICKS).keys()]);
  });

  it('the hub refuses the token of an agent that holds a run: it says so loudly and keeps retrying instead of exiting', async () => {
    const marker = `refused${Date.now()}`;
    const run = await owner.startRun(await owner.upload(await toyEngineWith(ticks(marker))));
    await until('ticking', async () => (await tickLines(run.id, marker)).length > 30, 60_000);
    // The hub stops knowing the token (as a hub on another database would) and the connection drops.
    const client = new Client({ connectionString: db.url });
    await client.connect();
    try {
      const { rows } = await client.query<{ token_hash: string }>(
        `SELECT token_hash FROM agents WHERE name = 'local' AND revoked_at IS NULL`,
      );
      const hash = rows[0].token_hash;
      await client.query(`UPDATE agents SET token_hash = 'forgotten' WHERE token_hash = $1`, [hash]);
      agent.child.kill('SIGUSR2'); // DRYFT_AGENT_TEST_HOOKS: a real socket drop
      await until(
        'the refusal banner',
        () => /refuses this agent's token/.test(agent.output()) || null,
        30_000,
      );
      expect(agent.output()).toContain(`still holds 1 run(s) (${run.id})`);
      await new Promise((r) => setTimeout(r, 2_000));
      expect(agent.child.exitCode).toBeNull();
      await client.query(`UPDATE agents SET token_hash = $1 WHERE token_hash = 'forgotten'`, [hash]);
    } finally {
      await client.end();
    }
    const done = await owner.waitFor(run.id, terminal, 120_000);
    expect(done.status, `${JSON.stringify(done)}\n${agent.output()}`).toBe('succeeded');
    expect(agent.child.exitCode).toBeNull();
    expect(await tickLines(run.id, marker)).toEqual([...Array(TICKS).keys()]);
  });
});
