#!/usr/bin/env node
// `npm start`: the hub (API + web on http://localhost:3000, embedded Postgres unless DATABASE_URL)
// and a local agent that runs the CPU benchmarks: toy-decode, and recurrence-cpu when its Python has
// torch. Ctrl-C stops both.
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';

const require = createRequire(import.meta.url);
const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..');
const port = process.env.PORT ?? '3000';
const dataDir = path.resolve(root, process.env.DATA_DIR ?? '.data');
mkdirSync(dataDir, { recursive: true });
const tokenFile = process.env.LOCAL_AGENT_TOKEN_FILE ?? path.join(dataDir, 'local-agent.token');
const withAgent = process.env.LOCAL_AGENT !== 'false' && process.env.NODE_ENV !== 'production';
const children = [];

function start(name, args, env) {
  const child = spawn(process.execPath, args, {
    cwd: root,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  children.push(child);
  child.on('exit', (code, signal) => {
    if (stopping) return;
    console.error(`[start] ${name} exited (${signal ?? code}); stopping.`);
    stop(code ?? 1);
  });
  return child;
}

let stopping = false;
function stop(code = 0) {
  if (stopping) return;
  stopping = true;
  for (const c of children) if (c.exitCode === null) c.kill('SIGTERM');
  // Never leave a child behind (an agent still finishing a run would hold its work folder and
  // refuse the next `npm start`'s agent): what has not exited after 8 s is killed.
  setTimeout(() => {
    for (const c of children)
      if (c.exitCode === null && c.signalCode === null) {
        console.error(`[start] process ${c.pid} did not stop within 8 s; killing it`);
        c.kill('SIGKILL');
      }
    process.exit(code);
  }, 8000).unref();
  Promise.all(children.map((c) => (c.exitCode !== null ? null : new Promise((r) => c.on('exit', r))))).then(
    () => process.exit(code),
  );
}
process.on('SIGINT', () => stop(0));
process.on('SIGTERM', () => stop(0));

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

start(
  'api',
  [...require('../apps/api/node-flags.cjs'), path.join(root, 'apps/api/dist/main.js')],
  withAgent ? { LOCAL_AGENT_TOKEN_FILE: tokenFile } : {},
);
if (!(await waitForHealth(Date.now() + 120_000))) {
  console.error('[start] the API did not become healthy within 120 s');
  stop(1);
} else if (withAgent) {
  const agentMain = path.join(root, 'apps/gpu-agent/dist/main.js');
  if (!existsSync(agentMain)) {
    console.error('[start] no local agent build (apps/gpu-agent/dist/main.js); runs will stay queued');
  } else {
    start('agent', [agentMain, '--local'], {
      DRYFT_API_URL: `http://127.0.0.1:${port}`,
      DRYFT_AGENT_TOKEN_FILE: tokenFile,
    });
  }
  console.log(`[start] Dryft is up: open http://localhost:${port}`);
}
