import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import * as path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { cleanLeftovers, tempPrefix, tempRoot } from '../../apps/gpu-agent/src/leftovers';
import {
  AgentProc,
  ApiProc,
  HttpUser,
  RunWatcher,
  spawnAgent,
  startApi,
  stopProc,
  terminal,
  toyEngineWith,
  until,
} from '../support/agent-helpers';
import { createTestDatabase } from '../support/db';
import { freePort, ROOT } from '../support/quickstart';

/**
 * What a killed agent leaves on disk is removed by the next agent process before it takes work;
 * the API exits within 5 s of a Ctrl-C, saying what it waited for, and stops its Postgres.
 */
const ticks = (n: number, marker: string) => `
import time as _t
for _i in range(${n}):
    print(f"tick ${marker} {_i}", flush=True)
    _t.sleep(0.02)
`;

function findFile(dir: string, name: string): string | null {
  if (!existsSync(dir)) return null;
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    if (e.isFile() && e.name === name) return p;
    if (e.isDirectory()) {
      const found = findFile(p, name);
      if (found) return found;
    }
  }
  return null;
}

describe('leftovers and a bounded shutdown', () => {
  const cleanups: (() => Promise<unknown> | unknown)[] = [];
  afterAll(async () => {
    for (const c of cleanups.reverse()) await Promise.resolve(c()).catch(() => undefined);
  });

  it('a killed agent leaves its run folder (the team engine) and temp folder; the next agent process removes them before taking work', async () => {
    const db = await createTestDatabase();
    cleanups.push(() => db.drop());
    const dataDir = path.join(ROOT, '.data', 'test', `fault-leftovers-${process.pid}-${Date.now()}`);
    mkdirSync(dataDir, { recursive: true });
    cleanups.push(() => rmSync(dataDir, { recursive: true, force: true }));
    const api = await startApi({
      dbUrl: db.url,
      port: await freePort(),
      dataDir,
      env: { ADMIN_LOGINS: 'org', AGENT_LEASE_SECONDS: '2' },
    });
    cleanups.push(() => stopProc(api));
    const org = await HttpUser.signIn(api.url, 'org');
    const { token } = await org.createAgent('leftover-box');
    const agentDir = path.join(dataDir, 'agent');
    let agent: AgentProc = spawnAgent({ apiUrl: api.url, token, dir: agentDir });
    cleanups.push(() => stopProc(agent, 'SIGKILL'));
    const owner = await HttpUser.signIn(api.url, 'leftover-owner');
    await owner.createTeam();

    const marker = `left${Date.now()}`;
    const run = await owner.startRun(await owner.upload(await toyEngineWith(ticks(2_000, marker))));
    const runDir = path.join(agent.workDir, 'runs', run.id);
    const prefix = tempPrefix(agent.workDir);
    const temps = () => readdirSync(tempRoot()).filter((e) => e.startsWith(prefix));
    await until(
      'ticking',
      async () => (await owner.allLogs(run.id)).some((l) => l.text === `tick ${marker} 10`) || null,
      60_000,
    );
    const engine = findFile(runDir, 'engine.py');
    expect(engine).not.toBeNull();
    expect(temps().length).toBeGreaterThan(0);

    await stopProc(agent, 'SIGKILL');
    // The fault: nobody cleaned up.
    expect(existsSync(engine!)).toBe(true);
    expect(temps().length).toBeGreaterThan(0);
    const failed = await owner.waitFor(run.id, terminal, 30_000);
    expect(failed.status).toBe('failed');
    expect(failed.failureCode).toBe('infra_error');

    agent = spawnAgent({ apiUrl: api.url, token, dir: agentDir });
    await until('agent connected', () => /connected to /.test(agent.output()) || null, 30_000);
    expect(agent.output()).toMatch(/removed \d+ folder\(s\) a previous agent process left behind/);
    // Said before connecting, i.e. before any work was taken.
    expect(agent.output().indexOf('removed ')).toBeLessThan(agent.output().indexOf('connected to '));
    expect(existsSync(runDir)).toBe(false);
    expect(temps()).toEqual([]);
    // And it still works.
    const next = await owner.startRun(await owner.upload(await toyEngineWith(ticks(5, `${marker}b`))));
    expect((await owner.waitFor(next.id, terminal, 90_000)).status).toBe('succeeded');
    await until('run folder wiped', () => !existsSync(path.join(agent.workDir, 'runs', next.id)) || null);
  });

  it.each([
    ['a Ctrl-C (SIGINT to its process group)', 'group'],
    ['SIGTERM (as npm start and service managers stop it)', 'api'],
  ] as const)(
    'exits within 5 s of %s with embedded Postgres, an agent and a watcher connected, a run streaming; stops its Postgres',
    async (_what, target) => {
      const dataDir = path.join(ROOT, '.data', 'test', `fault-shutdown-${process.pid}-${Date.now()}`);
      mkdirSync(dataDir, { recursive: true });
      cleanups.push(() => rmSync(dataDir, { recursive: true, force: true }));
      const pidFile = path.join(dataDir, 'postgres', 'postmaster.pid');
      cleanups.push(() => {
        if (existsSync(pidFile))
          process.kill(Number(readFileSync(pidFile, 'utf8').split('\n')[0]), 'SIGQUIT');
      });
      const api: ApiProc = await startApi({
        port: await freePort(),
        dataDir,
        detached: true,
        env: { ADMIN_LOGINS: 'org', LOG_LEVEL: 'log' },
      });
      cleanups.push(() => stopProc(api, 'SIGKILL'));
      const org = await HttpUser.signIn(api.url, 'org');
      const { token } = await org.createAgent('shutdown-box');
      const agent = spawnAgent({ apiUrl: api.url, token, dir: path.join(dataDir, 'agent') });
      cleanups.push(async () => {
        await stopProc(agent, 'SIGKILL');
        cleanLeftovers(agent.workDir, () => undefined); // its run was still going
      });
      const owner = await HttpUser.signIn(api.url, 'shutdown-owner');
      await owner.createTeam();
      const marker = `shut${Date.now()}`;
      const run = await owner.startRun(await owner.upload(await toyEngineWith(ticks(2_000, marker))));
      const watcher = new RunWatcher(api.url, { cookie: owner.cookie });
      cleanups.push(() => watcher.close());
      expect((await watcher.join(run.id)).ok).toBe(true);
      await until('ticking', () => watcher.lines.some((l) => l.text === `tick ${marker} 10`) || null, 60_000);
      const postgresPid = Number(readFileSync(pidFile, 'utf8').split('\n')[0]);

      const started = Date.now();
      if (target === 'group')
        process.kill(-api.child.pid!, 'SIGINT'); // as a terminal's Ctrl-C
      else api.child.kill('SIGTERM');
      const code = await api.exited;
      const exitMs = Date.now() - started;
      console.log(`[fault] API exit after ${_what}: ${exitMs} ms`);
      expect(exitMs).toBeLessThan(5_000);
      // An orderly stop (exit 0), not one cut short by another signal handler.
      expect({ code, output: api.output().slice(-3000) }).toMatchObject({ code: 0 });
      expect(api.output()).toMatch(
        /shutdown: closed the sockets, the HTTP server and the job queue \(\d+ ms\)/,
      );
      expect(api.output()).toMatch(/shutdown: stopped the embedded Postgres \(\d+ ms\)/);
      expect(api.output()).toMatch(/shutdown complete in \d+ ms/);
      // Its Postgres is stopped too, cleanly: no lock file left for the next start to deal with.
      expect(existsSync(pidFile)).toBe(false);
      let postgresAlive = true;
      try {
        process.kill(postgresPid, 0);
      } catch {
        postgresAlive = false;
      }
      expect(postgresAlive).toBe(false);
    },
  );
});
