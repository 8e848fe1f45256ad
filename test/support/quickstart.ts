import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import * as path from 'node:path';
import { createTestDatabase } from './db';
import { GENEROUS_RATE_LIMITS } from './rate-limits';

export const ROOT = path.resolve(__dirname, '../..');
export const API_MAIN = path.join(ROOT, 'apps/api/dist/main.js');
export const AGENT_MAIN = path.join(ROOT, 'apps/gpu-agent/dist/main.js');

/** A free loopback port (the API prints PORT back, so the test picks it rather than PORT=0). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

export interface Proc {
  child: ChildProcess;
  output: () => string;
  exited: Promise<number | null>;
}

function start(name: string, args: string[], env: NodeJS.ProcessEnv): Proc {
  const child = spawn(process.execPath, args, { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  const keep = (c: Buffer) => {
    out += c.toString('utf8');
    if (out.length > 400_000) out = out.slice(-200_000);
  };
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
  if (process.env.QUICKSTART_VERBOSE) {
    child.stdout!.on('data', (c: Buffer) => process.stderr.write(`[${name}] ${c}`));
    child.stderr!.on('data', (c: Buffer) => process.stderr.write(`[${name}] ${c}`));
  }
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return { child, output: () => out, exited };
}

async function stop(p: Proc | undefined, graceMs = 8000): Promise<void> {
  if (!p || p.child.exitCode !== null || p.child.signalCode !== null) return;
  p.child.kill('SIGTERM');
  const timer = setTimeout(() => p.child.kill('SIGKILL'), graceMs);
  await p.exited;
  clearTimeout(timer);
}

export interface Quickstart {
  url: string;
  port: number;
  api: Proc;
  agent?: Proc;
  dataDir: string;
  /** Whether a local agent process is running (apps/gpu-agent is built). */
  hasAgent: boolean;
  stopApi(): Promise<void>;
  close(): Promise<void>;
}

/**
 * The hub as a participant's machine sees it: `node apps/api/dist/main.js` on a fresh real
 * Postgres database and a loopback port, plus the local agent (`node apps/gpu-agent/dist/main.js
 * --local`, which reads the token the API writes to LOCAL_AGENT_TOKEN_FILE) running toy-decode on
 * the CPU. Build first (`npm run build`).
 */
export async function startQuickstart(
  opts: { agent?: boolean; env?: Record<string, string> } = {},
): Promise<Quickstart> {
  if (!existsSync(API_MAIN)) throw new Error(`${API_MAIN} is missing: run \`npm run build\` first`);
  const db = await createTestDatabase();
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const dataDir = path.join(ROOT, '.data', 'test', `quickstart-${process.pid}-${Date.now()}`);
  mkdirSync(dataDir, { recursive: true });
  const tokenFile = path.join(dataDir, 'local-agent.token');
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    NODE_ENV: 'development',
    LOG_LEVEL: 'warn',
    DATABASE_URL: db.url,
    PORT: String(port),
    HOST: '127.0.0.1',
    PUBLIC_URL: url,
    DATA_DIR: dataDir,
    LOCAL_AGENT_TOKEN_FILE: tokenFile,
    GITHUB_CLIENT_ID: '',
    GITHUB_CLIENT_SECRET: '',
    ...GENEROUS_RATE_LIMITS,
    ...opts.env,
  };
  delete env.GITHUB_CLIENT_ID;
  delete env.GITHUB_CLIENT_SECRET;
  const api = start('api', [API_MAIN], env);
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (api.child.exitCode !== null)
      throw new Error(`the API exited (${api.child.exitCode}):\n${api.output()}`);
    try {
      const res = await fetch(`${url}/api/health`);
      if (res.ok) break;
    } catch {
      /* not listening yet */
    }
    if (Date.now() > deadline) {
      await stop(api);
      throw new Error(`the API did not become healthy within 60 s:\n${api.output()}`);
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  let agent: Proc | undefined;
  const wantAgent = opts.agent !== false && existsSync(AGENT_MAIN);
  if (wantAgent) {
    for (let i = 0; i < 100 && !existsSync(tokenFile); i++) await new Promise((r) => setTimeout(r, 100));
    // --local reads PORT and LOCAL_AGENT_TOKEN_FILE (already in env); the DRYFT_AGENT_* overrides
    // keep its work folder inside this hub's data folder.
    agent = start('agent', [AGENT_MAIN, '--local'], {
      ...env,
      DRYFT_API_URL: url,
      DRYFT_AGENT_TOKEN_FILE: tokenFile,
      DRYFT_AGENT_WORK_DIR: path.join(dataDir, 'agent-work'),
    });
  }
  const stopApi = () => stop(api);
  return {
    url,
    port,
    api,
    agent,
    dataDir,
    hasAgent: Boolean(agent),
    stopApi,
    async close() {
      await stop(agent);
      await stopApi();
      await db.drop().catch(() => undefined);
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/**
 * Waits until the quick start's local agent is online, as an organizer (`organizerLogin`, one of the
 * hub's ADMIN_LOGINS) sees it on the agents list: runs started before would wait in the queue.
 */
export async function waitForLocalAgentOnline(
  url: string,
  organizerLogin: string,
  timeoutMs = 60_000,
): Promise<void> {
  const res = await fetch(`${url}/api/auth/dev`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ login: organizerLogin }),
  });
  const cookie = (res.headers.getSetCookie?.() ?? []).map((c) => c.split(';')[0]).join('; ');
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const list = await fetch(`${url}/api/admin/agents`, { headers: { cookie } });
    if (list.ok) {
      const agents = (await list.json()) as { name: string; status: string }[];
      if (agents.some((a) => a.name === 'local' && a.status === 'online')) return;
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(`the local agent did not come online within ${timeoutMs} ms`);
}
