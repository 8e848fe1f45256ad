#!/usr/bin/env node
// `npm start`: the hub (API + web on http://localhost:3000, embedded Postgres unless DATABASE_URL)
// and a local agent that runs the CPU benchmarks: toy-decode, and recurrence-cpu when its Python has
// torch. It supervises both: an API or agent that exits is started again with backoff (the agent
// reconnects to a restarted API and finishes its run; a restarted API stops the Postgres a killed
// one left and starts its own). Ctrl-C or SIGTERM stops them all, embedded Postgres included.
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { createRequire } from 'node:module';
import path from 'node:path';

const require = createRequire(import.meta.url);
const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..');
// The port the hub really gets: PORT=0 means any free one, picked here so that the API, the local
// agent and the address printed below all use the same one.
async function freePort() {
  const server = createServer();
  await new Promise((resolve, reject) => server.once('error', reject).listen(0, '127.0.0.1', resolve));
  const { port } = server.address();
  await new Promise((resolve) => server.close(resolve));
  return String(port);
}
const port = (process.env.PORT ?? '3000') === '0' ? await freePort() : (process.env.PORT ?? '3000');
const dataDir = path.resolve(root, process.env.DATA_DIR ?? '.data');
mkdirSync(dataDir, { recursive: true });
const tokenFile = process.env.LOCAL_AGENT_TOKEN_FILE ?? path.join(dataDir, 'local-agent.token');
const withAgent = process.env.LOCAL_AGENT !== 'false' && process.env.NODE_ENV !== 'production';
/** First restart delay; it doubles up to MAX_BACKOFF_MS, and starts over once a child ran a minute. */
const BACKOFF_MS = Number(process.env.START_RESTART_BACKOFF_MS ?? 1000);
const MAX_BACKOFF_MS = 30_000;
const HEALTHY_MS = 60_000;
/** How long a child may take to stop after SIGTERM before it is killed. */
const STOP_GRACE_MS = 8000;

/** @type {Map<string, {child: import('node:child_process').ChildProcess | null, timer?: NodeJS.Timeout}>} */
const supervised = new Map();
let stopping = false;

/** Starts `name` and starts it again whenever it exits, until the hub is stopped. */
function supervise(name, args, env) {
  const entry = { child: null, failures: 0, timer: undefined };
  supervised.set(name, entry);
  const launch = () => {
    entry.timer = undefined;
    if (stopping) return;
    const startedAt = Date.now();
    const child = spawn(process.execPath, args, {
      cwd: root,
      env: { ...process.env, ...env },
      stdio: ['ignore', 'inherit', 'inherit'],
    });
    entry.child = child;
    console.log(`[start] ${name} started (pid ${child.pid})`);
    child.on('exit', (code, signal) => {
      entry.child = null;
      if (stopping) return;
      if (Date.now() - startedAt >= HEALTHY_MS) entry.failures = 0;
      const delay = Math.min(MAX_BACKOFF_MS, BACKOFF_MS * 2 ** entry.failures++);
      console.error(`[start] ${name} exited (${signal ?? code}); starting it again in ${delay / 1000} s`);
      entry.timer = setTimeout(launch, delay);
    });
  };
  launch();
}

/** The embedded Postgres's postmaster, from its pid file (none with DATABASE_URL). */
function postmasterPid() {
  if (process.env.DATABASE_URL) return null;
  try {
    const pid = Number(readFileSync(path.join(dataDir, 'postgres', 'postmaster.pid'), 'utf8').split('\n')[0]);
    return Number.isInteger(pid) && pid > 0 ? pid : null;
  } catch {
    return null;
  }
}

function alive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

const exited = (child) =>
  child.exitCode !== null || child.signalCode !== null
    ? Promise.resolve()
    : new Promise((r) => child.once('exit', () => r()));
const within = (promise, ms) =>
  Promise.race([promise.then(() => true), new Promise((r) => setTimeout(() => r(false), ms).unref())]);

/**
 * Stops everything: the agent first (it hands back or finishes its runs), then the API (which
 * stops its embedded Postgres); whatever has not exited within the grace is killed, and a
 * Postgres a killed API left behind is stopped too. Nothing is left running.
 */
async function stop(code = 0) {
  if (stopping) return;
  stopping = true;
  for (const entry of supervised.values()) if (entry.timer) clearTimeout(entry.timer);
  for (const name of ['agent', 'api']) {
    const child = supervised.get(name)?.child;
    if (!child) continue;
    child.kill('SIGTERM');
    if (!(await within(exited(child), STOP_GRACE_MS))) {
      console.error(
        `[start] ${name} (pid ${child.pid}) did not stop within ${STOP_GRACE_MS / 1000} s; killing it`,
      );
      child.kill('SIGKILL');
      await within(exited(child), 2000);
    }
  }
  const pg = postmasterPid();
  if (pg && alive(pg)) {
    console.error(`[start] stopping the embedded Postgres the API left running (pid ${pg})`);
    process.kill(pg, 'SIGINT');
    for (let i = 0; i < 50 && alive(pg); i++) await new Promise((r) => setTimeout(r, 100));
    if (alive(pg)) process.kill(pg, 'SIGQUIT');
  }
  process.exit(code);
}
process.on('SIGINT', () => void stop(0));
process.on('SIGTERM', () => void stop(0));
process.on('SIGHUP', () => void stop(0));

async function waitForHealth(deadlineMs) {
  const url = `http://127.0.0.1:${port}/api/health`;
  while (Date.now() < deadlineMs) {
    try {
      const res = await fetch(url);
      if (res.ok) return true;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 300));
  }
  return false;
}

supervise(
  'api',
  [...require('../apps/api/node-flags.cjs'), path.join(root, 'apps/api/dist/main.js')],
  withAgent ? { PORT: port, LOCAL_AGENT_TOKEN_FILE: tokenFile } : { PORT: port },
);
if (!(await waitForHealth(Date.now() + 120_000))) {
  console.error('[start] the API did not become healthy within 120 s');
  await stop(1);
} else {
  if (withAgent) startAgent();
  console.log(`[start] Dryft is up: open ${process.env.PUBLIC_URL || `http://localhost:${port}`}`);
}

function startAgent() {
  const agentMain = path.join(root, 'apps/gpu-agent/dist/main.js');
  if (!existsSync(agentMain)) {
    console.error('[start] no local agent build (apps/gpu-agent/dist/main.js); runs will stay queued');
  } else {
    supervise('agent', [agentMain, '--local'], {
      DRYFT_API_URL: `http://127.0.0.1:${port}`,
      DRYFT_AGENT_TOKEN_FILE: tokenFile,
    });
  }
}
