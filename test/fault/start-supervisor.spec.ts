import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HttpUser, terminal, toyEngineWith, until } from '../support/agent-helpers';
import { freePort, ROOT } from '../support/quickstart';

/**
 * `npm start` (scripts/start.mjs) as a participant runs it: embedded Postgres, the API and the local
 * agent, all real processes. The API and the agent are killed outright under it; it starts them
 * again with backoff and the run finishes with every line once. SIGTERM to it stops everything,
 * embedded Postgres included.
 */
const ticks = (n: number, delay: number, marker: string) => `
import time as _t
for _i in range(${n}):
    print(f"tick ${marker} {_i}", flush=True)
    if ${delay}: _t.sleep(${delay})
`;

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

describe.skipIf(!existsSync(path.join(ROOT, 'apps/gpu-agent/dist/main.js')))(
  'npm start supervises the API and the agent',
  () => {
    let dataDir: string;
    let port: number;
    let url: string;
    let start: ChildProcess;
    let output = '';
    let owner: HttpUser;

    /** The pid of start.mjs's child running `name` now (read from the process table), or null. */
    const pidOf = (name: 'api' | 'agent'): number | null => {
      const main = name === 'api' ? 'apps/api/dist/main.js' : 'apps/gpu-agent/dist/main.js';
      const r = spawnSync('ps', ['-o', 'pid=,args=', '--ppid', String(start.pid)], { encoding: 'utf8' });
      const line = r.stdout.split('\n').find((l) => l.includes(main));
      return line ? Number(line.trim().split(/\s+/)[0]) : null;
    };
    const seen = new Set<number>();
    const remember = (pid: number | null) => (pid ? (seen.add(pid), pid) : null);
    const postmaster = () => {
      const file = path.join(dataDir, 'postgres', 'postmaster.pid');
      return existsSync(file) ? Number(readFileSync(file, 'utf8').split('\n')[0]) : null;
    };
    /** A probe that reads the hub while its API may be restarting: a refused connection is "not yet". */
    const tolerant = async <T>(probe: () => Promise<T>): Promise<T | null> => {
      try {
        return await probe();
      } catch {
        return null;
      }
    };
    const final = (runId: string) =>
      until(
        'the run final',
        () =>
          tolerant(async () => {
            const r = await owner.run(runId);
            return r && terminal(r) ? r : null;
          }),
        180_000,
      );
    const tickLines = async (runId: string, marker: string) =>
      (await owner.allLogs(runId))
        .filter((l) => l.text.startsWith(`tick ${marker} `))
        .map((l) => Number(l.text.split(' ')[2]));

    beforeAll(async () => {
      dataDir = path.join(ROOT, '.data', 'test', `start-supervisor-${process.pid}-${Date.now()}`);
      mkdirSync(dataDir, { recursive: true });
      port = await freePort();
      url = `http://127.0.0.1:${port}`;
      const env: NodeJS.ProcessEnv = {
        ...process.env,
        PORT: String(port),
        HOST: '127.0.0.1',
        PUBLIC_URL: url,
        DATA_DIR: dataDir,
        NODE_ENV: 'development',
        LOG_LEVEL: 'warn',
        DRYFT_AGENT_WORK_DIR: path.join(dataDir, 'agent-work'),
        START_RESTART_BACKOFF_MS: '500',
      };
      delete env.DATABASE_URL;
      delete env.REDIS_URL;
      delete env.LOCAL_AGENT_TOKEN_FILE;
      delete env.GITHUB_CLIENT_ID;
      delete env.GITHUB_CLIENT_SECRET;
      // `npm start`'s own command line (less the build, done before the tests), so a SIGTERM that npm
      // forwards to its shell reaches start.mjs (`exec`): without it the shell died and left all running.
      const script = (
        JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as {
          scripts: { start: string };
        }
      ).scripts.start;
      expect(script).toMatch(/^npm run build && exec node scripts\/start\.mjs$/);
      start = spawn('sh', ['-c', script.replace('npm run build', 'true')], {
        cwd: ROOT,
        env: { ...env, PATH: `${path.dirname(process.execPath)}:${env.PATH ?? ''}` },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      const keep = (c: Buffer) => {
        output += c.toString('utf8');
        if (process.env.QUICKSTART_VERBOSE) process.stderr.write(`[start] ${c}`);
      };
      start.stdout!.on('data', keep);
      start.stderr!.on('data', keep);
      await until(
        'npm start up with its agent',
        () => (output.includes('Dryft is up') && remember(pidOf('agent'))) || null,
        120_000,
      );
      remember(pidOf('api'));
      owner = await HttpUser.signIn(url, 'sup-owner');
      await owner.createTeam();
    }, 150_000);

    afterAll(async () => {
      if (start && start.exitCode === null) {
        start.kill('SIGTERM');
        await new Promise((r) => start.once('exit', r));
      }
      // Never leave a process behind, whatever failed above.
      for (const pid of seen) if (alive(pid)) process.kill(pid, 'SIGKILL');
      const pg = dataDir ? postmaster() : null;
      if (pg && alive(pg)) process.kill(pg, 'SIGQUIT');
      if (dataDir) rmSync(dataDir, { recursive: true, force: true });
    });

    it('kill -9 of the API mid-run: started again, and the run succeeds with every line once', async () => {
      const marker = `api${Date.now()}`;
      const LINES = 800; // printed at import, within the engine's 10 s load limit
      const run = await owner.startRun(await owner.upload(await toyEngineWith(ticks(LINES, 0.01, marker))));
      await until('ticking', async () => (await tickLines(run.id, marker)).length > 100 || null, 90_000);
      const first = pidOf('api')!;
      const agentPid = pidOf('agent')!;
      process.kill(first, 'SIGKILL');
      const killedAt = Date.now();
      await until(
        'the API started again',
        () => remember([pidOf('api')].find((p) => p && p !== first) ?? null),
        30_000,
      );
      expect(output).toMatch(/\[start\] api exited \(SIGKILL\); starting it again in 0\.5 s/);
      const done = await final(run.id);
      console.log(`[fault start] API killed mid-run: run ${done.status} ${Date.now() - killedAt} ms later`);
      expect(done.status, JSON.stringify(done)).toBe('succeeded');
      expect(await tickLines(run.id, marker)).toEqual([...Array(LINES).keys()]);
      const stored = await owner.allLogs(run.id);
      expect(stored.map((l) => l.seq)).toEqual(stored.map((_, i) => i + 1));
      expect(pidOf('agent')).toBe(agentPid); // the agent was never stopped
    }, 240_000);

    it('kill -9 of the agent: started again, and it takes the next run', async () => {
      const first = pidOf('agent')!;
      process.kill(first, 'SIGKILL');
      await until(
        'the agent started again',
        () => remember([pidOf('agent')].find((p) => p && p !== first) ?? null),
        30_000,
      );
      expect(output).toMatch(/\[start\] agent exited \(SIGKILL\); starting it again in 0\.5 s/);
      const marker = `agent${Date.now()}`;
      const run = await owner.startRun(await owner.upload(await toyEngineWith(ticks(20, 0, marker))));
      const done = await final(run.id);
      expect(done.status, JSON.stringify(done)).toBe('succeeded');
      expect(done.agentName).toBeTruthy();
    }, 240_000);

    it('SIGTERM to npm start stops everything: no Postgres, API or agent left running', async () => {
      const pids = {
        api: pidOf('api')!,
        agent: pidOf('agent')!,
        postgres: postmaster()!,
      };
      for (const [what, pid] of Object.entries(pids)) expect(alive(pid), what).toBe(true);
      const exited = new Promise<number | null>((r) => start.once('exit', (code) => r(code)));
      start.kill('SIGTERM');
      expect(await exited).toBe(0);
      for (const [what, pid] of Object.entries(pids)) expect(alive(pid), `${what} (pid ${pid})`).toBe(false);
      expect(postmaster()).toBeNull(); // Postgres shut down cleanly (it removes its pid file)
    }, 60_000);
  },
);
