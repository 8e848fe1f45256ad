#!/usr/bin/env node
// gpu-smoke: an operator's end-to-end check of a GPU box before it takes real work
// (apps/gpu-agent/README.md, docs/GPU_E2E.md).
//
//   node scripts/gpu-smoke.mjs [--full] [--model DIR] [--data DIR] [--out DIR] [--keep] [--budget-s N]
//   node scripts/gpu-smoke.mjs --cpu-rehearsal          # the same loop on toy-decode, no GPU needed
//
// It starts a hub (the API with embedded Postgres and a DATA_DIR of its own), a real agent with one
// slot per GPU (bubblewrap sandbox, nested engine jail), builds a Qwen3-4B-shaped checkpoint with
// random weights where the real one is absent, and drives the whole loop through the REST API and
// the /live socket as a participant would: the unchanged starter (public, then official), the fast
// example (official), a perturbed-logit engine (must fail incorrect_output), and a canceled run
// (GPU memory must be freed). It checks every verdict, the runtime versions the agent reports, the
// live stream of logs and samples while the GPU works, and the harness's cost per step against the
// fast engine timed in-process; then prints one table. Exit 0: all checks passed; 1: one failed.
// Without a GPU (no nvidia-smi, or no device) it prints a SKIP line and exits 0.
//
// By default it runs a SMOKE PROFILE of qwen3-4b-decode (benchmark id qwen3-4b-decode-smoke: the
// same model family, engines and checks, with small workloads and few samples, so the whole loop
// takes minutes); --full uses config/benchmarks/qwen3-4b-decode.yaml unchanged (an hour or more).
import { spawn, spawnSync } from 'node:child_process';
import {
  appendFileSync,
  existsSync,
  mkdirSync,
  readFileSync,
  readdirSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { createServer } from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const argv = process.argv.slice(2);
const flag = (n) => argv.includes(n);
const value = (n) => {
  const i = argv.indexOf(n);
  return i >= 0 ? argv[i + 1] : undefined;
};
const rehearsal = flag('--cpu-rehearsal');
// --only cancel,view,…: just those steps, in that order (a second call on a lent machine that
// finishes what the first did not reach); default starter-public, starter-official, fast,
// perturbed, view, cancel.
const only = value('--only')?.split(',');
const full = flag('--full');
const started = Date.now();
const elapsed = () => `${((Date.now() - started) / 1000).toFixed(1)}s`;
const outDir = value('--out') ? path.resolve(value('--out')) : null;
if (outDir) mkdirSync(outDir, { recursive: true });
function say(line) {
  const text = `[gpu-smoke ${elapsed()}] ${line}`;
  console.log(text);
  if (outDir) appendFileSync(path.join(outDir, 'gpu-smoke.log'), `${text}\n`);
}

// ---- 1. Is there a GPU? ---------------------------------------------------------------------------
function gpus() {
  const r = spawnSync(
    'nvidia-smi',
    ['--query-gpu=index,name,driver_version,memory.total,memory.used', '--format=csv,noheader,nounits'],
    { encoding: 'utf8', timeout: 20_000 },
  );
  if (r.error || r.status !== 0)
    return { list: [], why: (r.error?.message ?? r.stderr ?? '').trim() || `exit ${r.status}` };
  const list = r.stdout
    .split('\n')
    .map((l) => l.trim())
    .filter(Boolean)
    .map((l) => {
      const [index, name, driver, total, used] = l.split(',').map((x) => x.trim());
      return { index, name, driver, totalMiB: Number(total), usedMiB: Number(used) };
    });
  return { list, why: list.length ? '' : 'nvidia-smi lists no GPU' };
}
const gpu = rehearsal ? { list: [], why: '' } : gpus();
if (!rehearsal && gpu.list.length === 0) {
  console.log(
    `SKIP gpu-smoke: no NVIDIA GPU on this machine (${gpu.why}); nothing was run. Run it on a GPU box, ` +
      'or pass --cpu-rehearsal to drive the same loop on toy-decode.',
  );
  process.exit(0);
}

// Imported only past the skip: a machine without a GPU needs no node_modules to be told so.
const { io } = await import('socket.io-client');
const { packFiles } = await import('@dryft/libs/node');

// ---- 2. Paths: the packed layout (scripts/pack-gpu-smoke.sh) or a built checkout -------------------
const pick = (...c) => c.find((p) => existsSync(p));
const apiMain = pick(path.join(root, 'apps/api/bundle/main.cjs'), path.join(root, 'apps/api/dist/main.js'));
const agentMain = pick(
  path.join(root, 'apps/gpu-agent/bundle/main.cjs'),
  path.join(root, 'apps/gpu-agent/dist/main.js'),
);
if (!apiMain || !agentMain) {
  console.error(
    'gpu-smoke: no API/agent build: run `npm run build` (or use the pack of scripts/pack-gpu-smoke.sh)',
  );
  process.exit(1);
}
const bwrap = pick(path.join(root, 'bin/bwrap'), '/usr/bin/bwrap');
const dataDir = path.resolve(value('--data') ?? path.join(root, '.data', `gpu-smoke-${process.pid}`));
rmSync(dataDir, { recursive: true, force: true });
mkdirSync(dataDir, { recursive: true });
const which = (cmd) => spawnSync('sh', ['-c', `command -v ${cmd}`], { encoding: 'utf8' }).stdout.trim();
const python =
  process.env.HARNESS_PYTHON ?? (rehearsal ? '/usr/bin/python3' : which('python3') || '/usr/bin/python3');

// ---- 3. The benchmark: the smoke profile, or the full definition --------------------------------
const benchDir = path.join(dataDir, 'benchmarks');
mkdirSync(benchDir, { recursive: true });
let benchId;
let modelDir = null;
if (rehearsal) {
  benchId = 'toy-decode';
  // The rehearsal checks the plumbing, not a shared CPU's timing noise: no stability limit.
  writeFileSync(
    path.join(benchDir, 'toy-decode.yaml'),
    readFileSync(path.join(root, 'config/benchmarks/toy-decode.yaml'), 'utf8').replace(
      /maxRatioSpreadPct: [\d.]+/,
      'maxRatioSpreadPct: 100000',
    ),
  );
} else if (full) {
  benchId = 'qwen3-4b-decode';
  writeFileSync(
    path.join(benchDir, 'qwen3-4b-decode.yaml'),
    readFileSync(path.join(root, 'config/benchmarks/qwen3-4b-decode.yaml')),
  );
} else {
  benchId = 'qwen3-4b-decode-smoke';
  const models = [...new Set(gpu.list.map((g) => g.name))];
  writeFileSync(
    path.join(benchDir, `${benchId}.yaml`),
    `# SMOKE PROFILE written by scripts/gpu-smoke.mjs: qwen3-4b-decode with small workloads and few
# samples, so an operator's whole check takes minutes. NOT the official definition
# (config/benchmarks/qwen3-4b-decode.yaml; gpu-smoke --full runs that one).
id: ${benchId}
title: Qwen3 4B decode (SMOKE PROFILE)
summary: gpu-smoke's operator check of a GPU box; not a competition benchmark.
kind: decode
ranks: teams
rulesVersion: 1
submissionsOpen: true
evaluationsOpen: true
runTimeLimitSeconds: 900
logs: { maxLines: 100000, maxBytes: 33554432, maxLineBytes: 16384, tailLines: 1000 }
hardware:
  accelerator: gpu
  gpuModels: ${JSON.stringify(models)}
starter: starters/qwen3-4b-decode
scoring:
  unit: points
  description: 100 is the baseline engine measured on the same GPU model (smoke profile).
submission: { type: archive }
model:
  family: qwen3
  path: /models/Qwen3-4B-Instruct-2507
  checkpoint: Qwen/Qwen3-4B-Instruct-2507
  revision: cdbee75f17c01a7cc42f958dc650907174af0554
baselineEngine: starters/qwen3-4b-decode/engine
workloads:
  public:
    - { name: s-b1-p64, batchSize: 1, promptLength: 64, maxNewTokens: 32, seed: 1 }
    - { name: s-b8-p64, batchSize: 8, promptLength: 64, maxNewTokens: 32, seed: 2 }
  hidden:
    - { name: s-h-b1-p64, batchSize: 1, promptLength: 64, maxNewTokens: 32, seed: 70001 }
    - { name: s-h-b8-p128, batchSize: 8, promptLength: 128, maxNewTokens: 32, seed: 70002 }
samples: { public: 1, official: 3, warmup: 1, maxPairs: 3, targetHalfWidthPct: 50 }
limits: { loadSeconds: 300, sampleSeconds: 60, runSeconds: 800, memoryBytes: 40000000000, memoryMeasure: auto }
checks: { maxTtftMs: null, maxTpotMs: 200, maxRatioSpreadPct: 60, logitTolerance: 0.25 }
dailyLimits: { official: 50 }
`,
  );
}

// ---- 4. The checkpoint -----------------------------------------------------------------------------
if (!rehearsal) {
  const real = '/models/Qwen3-4B-Instruct-2507';
  modelDir = value('--model')
    ? path.resolve(value('--model'))
    : existsSync(path.join(real, 'config.json'))
      ? real
      : null;
  if (!modelDir) {
    modelDir = '/var/lib/dryft-gpu-smoke/qwen3-4b-random';
    if (!existsSync(path.join(modelDir, 'config.json'))) {
      say(`no ${real}: building a Qwen3-4B-shaped checkpoint with random BF16 weights in ${modelDir}`);
      mkdirSync(path.dirname(modelDir), { recursive: true });
      const b = spawnSync(python, [path.join(root, 'harness/tests/gpu/build_qwen3_4b.py'), modelDir], {
        stdio: 'inherit',
        timeout: 600_000,
      });
      if (b.status !== 0) {
        say(`FAILED to build the checkpoint (exit ${b.status})`);
        process.exit(1);
      }
    } else say(`using the random-weight checkpoint built earlier: ${modelDir}`);
    // save_pretrained writes model.safetensors with mode 0600; the engine child runs as a uid of
    // its own (sandboxUidBase + …), which must be able to read it.
    spawnSync('chmod', ['-R', 'a+rX', modelDir]);
  } else say(`model: ${modelDir}`);
  const unreadable = readdirSync(modelDir, { withFileTypes: true })
    .filter((e) => e.isFile())
    .map((e) => path.join(modelDir, e.name))
    .filter((f) => (statSync(f).mode & 0o004) === 0);
  if (unreadable.length) {
    say(
      `FAIL the checkpoint is not readable by the engine's own uid (the jail runs it as sandboxUidBase + 4 × slot): ${unreadable.join(', ')}; run \`chmod -R a+rX ${modelDir}\``,
    );
    process.exit(1);
  }
}

// ---- 5. Hub and agent ------------------------------------------------------------------------------
function freePort() {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}
const procs = [];
function startProc(name, args, env) {
  const child = spawn(process.execPath, args, { cwd: root, env, stdio: ['ignore', 'pipe', 'pipe'] });
  const logFile = path.join(outDir ?? dataDir, `${name}.log`);
  writeFileSync(logFile, '');
  const keep = (c) => appendFileSync(logFile, c);
  child.stdout.on('data', keep);
  child.stderr.on('data', keep);
  const exited = new Promise((r) => child.once('exit', (code, sig) => r(sig ?? code)));
  const p = { name, child, exited, logFile };
  procs.push(p);
  return p;
}
async function stopAll() {
  for (const p of [...procs].reverse()) {
    if (p.child.exitCode !== null || p.child.signalCode !== null) continue;
    p.child.kill('SIGTERM');
    const t = setTimeout(() => p.child.kill('SIGKILL'), 15_000);
    await p.exited;
    clearTimeout(t);
  }
}
const port = await freePort();
const url = `http://127.0.0.1:${port}`;
const operator = 'gpu-smoke-operator';
const baseEnv = { ...process.env, DRYFT_ROOT: root };
delete baseEnv.GITHUB_CLIENT_ID;
delete baseEnv.GITHUB_CLIENT_SECRET;
delete baseEnv.DATABASE_URL;
const api = startProc('api', [apiMain], {
  ...baseEnv,
  NODE_ENV: 'development',
  LOG_LEVEL: 'warn',
  PORT: String(port),
  HOST: '127.0.0.1',
  PUBLIC_URL: url,
  DATA_DIR: dataDir,
  BENCHMARKS_DIR: benchDir,
  ADMIN_LOGINS: operator,
  ...(process.env.GPU_SMOKE_DATABASE_URL ? { DATABASE_URL: process.env.GPU_SMOKE_DATABASE_URL } : {}),
});
const results = [];
const rows = [];
let failed = false;
/** ok: true (PASS), false (FAIL), or 'info' (INFO: a figure that decides nothing, e.g. an inconclusive comparison). */
function record(check, ok, detail) {
  results.push({ check, ok, detail });
  if (!ok) failed = true;
  say(`${verdictWord(ok)} ${check}: ${detail}`);
}
function verdictWord(ok) {
  return ok === 'info' ? 'INFO' : ok ? 'PASS' : 'FAIL';
}
async function finish(code) {
  await stopAll();
  printTable();
  if (!flag('--keep')) rmSync(dataDir, { recursive: true, force: true });
  process.exit(code);
}
process.on('SIGINT', () => void finish(130));
process.on('SIGTERM', () => void finish(143));

async function waitHealthy() {
  const deadline = Date.now() + 180_000;
  while (Date.now() < deadline) {
    if (api.child.exitCode !== null) break;
    try {
      if ((await fetch(`${url}/api/health`)).ok) return true;
    } catch {
      /* not yet */
    }
    await new Promise((r) => setTimeout(r, 300));
  }
  return false;
}
if (!(await waitHealthy())) {
  say(
    `the API did not become healthy; its log: ${api.logFile}\n${readFileSync(api.logFile, 'utf8').slice(-3000)}`,
  );
  await finish(1);
}
say(`hub up on ${url} (data ${dataDir})`);

// REST helpers
async function call(method, p, { body, cookie, csrf, token, form, expect } = {}) {
  const headers = {};
  if (cookie) headers.cookie = cookie;
  if (csrf) headers['x-csrf-token'] = csrf;
  if (token) headers.authorization = `Bearer ${token}`;
  let payload;
  if (form) payload = form;
  else if (body !== undefined) {
    headers['content-type'] = 'application/json';
    payload = JSON.stringify(body);
  }
  const res = await fetch(`${url}${p}`, { method, headers, body: payload });
  const text = await res.text();
  let json;
  try {
    json = JSON.parse(text);
  } catch {
    json = text;
  }
  if (expect && res.status !== expect) throw new Error(`${method} ${p}: ${res.status} ${text.slice(0, 500)}`);
  return { status: res.status, json, headers: res.headers };
}
async function signIn(login) {
  const r = await fetch(`${url}/api/auth/dev`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ login }),
  });
  if (r.status !== 200) throw new Error(`dev sign-in: ${r.status} ${await r.text()}`);
  const cookie = r.headers
    .getSetCookie()
    .map((c) => c.split(';')[0])
    .join('; ');
  const csrf = (await r.json()).csrfToken;
  return { cookie, csrf };
}

let token;
let agentId;
try {
  const op = await signIn(operator);
  const created = await call('POST', '/api/admin/agents', {
    ...op,
    body: { name: `gpu-smoke ${gpu.list[0]?.name ?? 'cpu'}` },
    expect: 201,
  });
  agentId = created.json.id;
  writeFileSync(path.join(dataDir, 'agent.token'), `${created.json.token}\n`, { mode: 0o600 });
  const team = await call('POST', '/api/teams', { ...op, body: { name: 'gpu smoke' }, expect: 201 });
  token = (
    await call('POST', `/api/teams/${team.json.id}/tokens`, {
      ...op,
      body: { name: 'gpu-smoke' },
      expect: 201,
    })
  ).json.token;
} catch (err) {
  say(`setting up the hub failed: ${err.message}`);
  await finish(1);
}

const slots = rehearsal ? [{ index: 0, gpus: [] }] : gpu.list.map((g, i) => ({ index: i, gpus: [g.index] }));
const agentConfig = {
  apiUrl: url,
  tokenFile: path.join(dataDir, 'agent.token'),
  slots,
  ...(rehearsal ? { accelerator: 'cpu', gpuModel: null } : { accelerator: 'gpu' }),
  benchmarks: [benchId],
  harness: { python },
  models: modelDir ? { [benchId]: modelDir } : {},
  workDir: path.join(dataDir, 'agent-work'),
  repoDir: root,
};
writeFileSync(path.join(dataDir, 'agent.json'), JSON.stringify(agentConfig, null, 2));
const agent = startProc('agent', [agentMain, '--config', path.join(dataDir, 'agent.json')], {
  ...baseEnv,
  DRYFT_BWRAP: bwrap,
  NCCL_NVLS_ENABLE: '0',
});
say(
  `agent started: ${slots.length} slot(s) ${JSON.stringify(slots.map((s) => s.gpus))}, python ${python}, bwrap ${bwrap}`,
);

// ---- 6. The agent's report ---------------------------------------------------------------------------
const op = await signIn(operator);
let agentView = null;
for (let i = 0; i < 240 && !agentView; i++) {
  const list = await call('GET', '/api/admin/agents', op);
  const a = Array.isArray(list.json) ? list.json.find((x) => x.id === agentId) : null;
  if (a && a.status === 'online' && a.capabilities) agentView = a;
  else {
    if (agent.child.exitCode !== null) break;
    await new Promise((r) => setTimeout(r, 500));
  }
}
if (!agentView) {
  record(
    'agent online',
    false,
    `never came online; log ${agent.logFile}:\n${readFileSync(agent.logFile, 'utf8').slice(-3000)}`,
  );
  await finish(1);
}
const caps = agentView.capabilities;
record(
  'agent online',
  true,
  `${agentView.slots} slot(s), ${caps.accelerator}, ${caps.gpuModel ?? 'no GPU'} ×${caps.gpuCount}, driver ${caps.driver ?? '-'}`,
);
const rt = caps.runtime ?? {};
const wanted = ['python', 'torch', 'cuda', 'triton', 'transformers', 'driver'];
// CPU agents report no runtime (only GPU agents ask their interpreter at start).
if (!rehearsal)
  record(
    'runtime versions reported',
    wanted.every((k) => rt[k]),
    Object.entries(rt)
      .map(([k, v]) => `${k} ${v}`)
      .join(', ') || 'none',
  );
if (Object.keys(caps.cannotRun ?? {}).length)
  record('agent can run decode', false, JSON.stringify(caps.cannotRun));

// ---- 7. Submissions and runs -----------------------------------------------------------------------
async function folderFiles(dir, prefix = '') {
  const out = [];
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    if (e.name === '__pycache__') continue;
    const full = path.join(dir, e.name);
    if (e.isDirectory()) out.push(...(await folderFiles(full, `${prefix}${e.name}/`)));
    else out.push({ name: `${prefix}${e.name}`, content: readFileSync(full) });
  }
  return out;
}
async function upload(name, files) {
  const form = new FormData();
  form.set('benchmark', benchId);
  form.set('file', new Blob([packFiles(files)]), `${name}.tar.gz`);
  const r = await call('POST', '/api/submissions', { token, form });
  if (r.status !== 201)
    throw new Error(`upload ${name}: ${r.status} ${JSON.stringify(r.json).slice(0, 800)}`);
  return r.json.submission.id;
}
async function startRun(submissionId, mode) {
  const r = await call('POST', `/api/submissions/${submissionId}/runs`, {
    token,
    body: mode === 'official' ? { mode, confirm: true } : { mode },
  });
  if (r.status !== 201) throw new Error(`run ${mode}: ${r.status} ${JSON.stringify(r.json).slice(0, 800)}`);
  return r.json.run.id;
}

/** Follows a run on /live as the web does; returns when it finishes. */
function watch(runId, { onSample } = {}) {
  const seen = { logs: 0, samples: 0, firstLogAt: null, firstSampleAt: null, finishedAt: null, status: null };
  const socket = io(`${url}/live`, { auth: { token }, transports: ['websocket'], reconnection: true });
  socket.on('connect', () => socket.emit('run.join', { runId, afterSeq: 0 }, () => undefined));
  socket.on('run.log', (e) => {
    if (e.runId && e.runId !== runId) return;
    seen.logs += Array.isArray(e.lines) ? e.lines.length : 1;
    seen.firstLogAt ??= Date.now();
  });
  socket.on('run.sample', (e) => {
    if (e.runId && e.runId !== runId) return;
    seen.samples += 1;
    seen.firstSampleAt ??= Date.now();
    onSample?.(e);
  });
  const done = (async () => {
    for (;;) {
      const r = await call('GET', `/api/runs/${runId}`, { token });
      if (['succeeded', 'failed', 'canceled'].includes(r.json.status)) {
        seen.finishedAt = Date.now();
        seen.status = r.json.status;
        socket.close();
        return r.json;
      }
      await new Promise((res) => setTimeout(res, 500));
    }
  })();
  return { seen, done, socket };
}

/** Every stored log line of a run, as `[stream] text`. */
async function runLogs(runId) {
  const lines = [];
  let after = 0;
  for (let i = 0; i < 200; i++) {
    const r = await call('GET', `/api/runs/${runId}/logs?after=${after}&limit=5000`, { token });
    if (r.status !== 200) break;
    for (const l of r.json.items) lines.push(`[${l.stream}] ${l.text}`);
    if (!r.json.items.length || r.json.complete) break;
    after = r.json.nextAfter;
  }
  return lines;
}

// --budget-s N: start no new run past N seconds (a machine lent for a fixed time); what is left is
// reported as not run.
const budgetS = Number(value('--budget-s') ?? 0);
class OutOfTime extends Error {}
async function scenario({ label, submissionId, mode, expect, failureCode }) {
  if (budgetS && (Date.now() - started) / 1000 > budgetS)
    throw new OutOfTime(`${label} (${mode}) and what follows were not run: past --budget-s ${budgetS}`);
  const t0 = Date.now();
  const runId = await startRun(submissionId, mode);
  const w = watch(runId);
  const run = await w.done;
  const result = (await call('GET', `/api/runs/${runId}/result`, { token })).json;
  const secs = (Date.now() - t0) / 1000;
  const logs = await runLogs(runId);
  if (outDir)
    appendFileSync(
      path.join(outDir, 'runs.log'),
      `==== ${label} (${mode}) ${runId}: ${run.status} ${run.failureCode ?? ''}\n${logs.join('\n')}\n`,
    );
  const ok = run.status === expect && (!failureCode || run.failureCode === failureCode);
  const memCheck = (result.checks ?? []).find((c) => c.name === 'memory');
  const wl = (result.workloads ?? [])
    .map(
      (x) =>
        `${x.workload}: TPOT ${x.tpotMs?.toFixed(3) ?? '-'} ms${x.speedup ? ` ×${x.speedup.toFixed(2)}` : ''}`,
    )
    .join('; ');
  rows.push({
    label,
    mode,
    expected: failureCode ? `${expect} ${failureCode}` : expect,
    got: `${run.status}${run.failureCode ? ` ${run.failureCode}` : ''}`,
    score: run.score,
    secs,
    live: `${w.seen.logs} lines, ${w.seen.samples} samples`,
    detail: [wl || (run.message ?? '').slice(0, 160), memCheck ? `memory: ${memCheck.detail}` : '']
      .filter(Boolean)
      .join('; '),
  });
  if (!ok) say(`${label} (${mode}): the run's log ends:\n${logs.slice(-40).join('\n')}`);
  record(
    `${label} (${mode})`,
    ok,
    `${run.status}${run.failureCode ? ` ${run.failureCode}` : ''}${run.score != null ? `, score ${run.score.toFixed(2)}` : ''} in ${secs.toFixed(1)} s; ${wl}${!ok && run.message ? `; message: ${run.message}` : ''}`,
  );
  if (w.seen.samples > 0 || w.seen.logs > 0) {
    const lead = w.seen.firstSampleAt ? (w.seen.finishedAt - w.seen.firstSampleAt) / 1000 : null;
    record(
      `${label}: live stream`,
      w.seen.logs > 0 && (expect !== 'succeeded' || (w.seen.samples > 0 && lead > 0)),
      `${w.seen.logs} log lines and ${w.seen.samples} sample events reached a /live watcher; the first sample ${lead == null ? 'never came' : `${lead.toFixed(1)} s before the run finished`}`,
    );
  } else record(`${label}: live stream`, false, 'nothing reached the /live watcher');
  return { runId, run, result, logs };
}

// An engine that prints what it sees from inside the agent's sandbox and its own jail, then behaves
// as its base: uid, /dev/nvidia* nodes, CUDA's and NVML's view.
const SANDBOX_VIEW = `import json, os
from base import Engine as Base


def _view():
    v = {"uid": os.getuid(), "dev": sorted(n for n in os.listdir("/dev") if n.startswith("nvidia")),
         "CUDA_VISIBLE_DEVICES": os.environ.get("CUDA_VISIBLE_DEVICES")}
    try:
        import torch
        v["cuda"] = torch.cuda.is_available()
        v["devices"] = [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]
    except Exception as e:
        v["torch"] = repr(e)
    try:
        import pynvml
        pynvml.nvmlInit()
        used = []
        for i in range(pynvml.nvmlDeviceGetCount()):
            try:
                used.append(pynvml.nvmlDeviceGetMemoryInfo(pynvml.nvmlDeviceGetHandleByIndex(i)).used)
            except Exception as e:
                used.append(repr(e))
        v["nvml"] = used
    except Exception as e:
        v["nvml"] = repr(e)
    return v


class Engine(Base):
    def __init__(self, model_path):
        print("sandbox-view: " + json.dumps(_view()), flush=True)
        super().__init__(model_path)
`;

const starterDir = path.join(root, 'starters', rehearsal ? 'toy-decode' : 'qwen3-4b-decode');
const fastDir = path.join(starterDir, 'examples', 'fast');
let fastResult = null;
try {
  const starter = await upload('starter', await folderFiles(path.join(starterDir, 'engine')));
  const fast = await upload('fast', await folderFiles(fastDir));
  let perturbedFiles;
  if (rehearsal) {
    // The toy baseline with one wrong token: sequence 1's first token moved by one.
    perturbedFiles = [
      { name: 'base.py', content: readFileSync(path.join(starterDir, 'engine/engine.py')) },
      {
        name: 'engine.py',
        content: Buffer.from(
          'from base import Engine as Base\n\n\nclass Engine(Base):\n    def generate(self, input_ids, max_new_tokens):\n        for i, step in enumerate(super().generate(input_ids, max_new_tokens)):\n            if i == 0 and len(step) > 1:\n                step = list(step)\n                step[1] = (step[1] + 1) % self.V\n            yield step\n',
        ),
      },
    ];
  } else {
    const fastFiles = await folderFiles(fastDir);
    perturbedFiles = [
      ...fastFiles.filter((f) => f.name !== 'engine.py'),
      { name: 'base.py', content: readFileSync(path.join(fastDir, 'engine.py')) },
      {
        name: 'engine.py',
        content: readFileSync(path.join(root, 'harness/tests/engines/qwen3_perturbed.py')),
      },
    ];
  }
  const perturbed = await upload('perturbed', perturbedFiles);
  const baseFiles = rehearsal
    ? [{ name: 'base.py', content: readFileSync(path.join(starterDir, 'engine/engine.py')) }]
    : [
        ...(await folderFiles(fastDir)).filter((f) => f.name !== 'engine.py'),
        { name: 'base.py', content: readFileSync(path.join(fastDir, 'engine.py')) },
      ];
  const viewer = await upload('sandbox-view', [
    ...baseFiles,
    { name: 'engine.py', content: Buffer.from(SANDBOX_VIEW) },
  ]);
  say('uploaded: the unchanged starter, the fast example, the perturbed-logit engine');

  const steps = {
    'starter-public': () =>
      scenario({ label: 'starter', submissionId: starter, mode: 'public', expect: 'succeeded' }),
    'starter-official': () =>
      scenario({ label: 'starter', submissionId: starter, mode: 'official', expect: 'succeeded' }),
    fast: async () => {
      fastResult = await scenario({
        label: 'fast example',
        submissionId: fast,
        mode: 'official',
        expect: 'succeeded',
      });
      if (fastResult.run.status === 'succeeded')
        record(
          'fast example beats the baseline',
          (fastResult.run.score ?? 0) > 100,
          `score ${fastResult.run.score}`,
        );
    },
    perturbed: async () => {
      const p = await scenario({
        label: 'perturbed logits',
        submissionId: perturbed,
        mode: 'public',
        expect: 'failed',
        failureCode: 'incorrect_output',
      });
      if (p.run.message) say(`perturbed: ${p.run.message.slice(0, 300)}`);
    },
    // What the engine sees from inside the agent's sandbox and its jail.
    view: async () => {
      const v = await scenario({
        label: 'sandbox view',
        submissionId: viewer,
        mode: 'public',
        expect: 'succeeded',
      });
      const viewLine = v.logs.find((l) => l.includes('sandbox-view: '));
      if (!viewLine) return record('sandbox view', false, 'the engine printed no sandbox-view line');
      const view = JSON.parse(viewLine.slice(viewLine.indexOf('sandbox-view: ') + 14));
      const slotNodes = rehearsal ? [] : [`nvidia${slots[0].gpus[0]}`];
      const gpuNodes = view.dev.filter((n) => /^nvidia\d+$/.test(n));
      const ok =
        view.uid !== 0 &&
        JSON.stringify(gpuNodes) === JSON.stringify(slotNodes) &&
        (rehearsal || (view.cuda === true && view.devices.length === 1));
      record('sandbox view', ok, `engine child: ${JSON.stringify(view)}`);
    },
    // ---- 8. Cancel while the GPU works -------------------------------------------------------------
    cancel: () => cancelCheck(starter),
  };
  for (const step of only ?? Object.keys(steps)) {
    if (!steps[step])
      throw new Error(`--only: unknown step ${step} (one of ${Object.keys(steps).join(', ')})`);
    await steps[step]();
  }
} catch (err) {
  record('the loop', false, err instanceof OutOfTime ? err.message : (err.stack ?? String(err)));
}

async function cancelCheck(starter) {
  if (budgetS && (Date.now() - started) / 1000 > budgetS)
    throw new OutOfTime(`the cancel check was not run: past --budget-s ${budgetS}`);
  const before = rehearsal ? null : gpus().list;
  const cancelRun = await startRun(starter, 'public');
  let sampleSeen;
  const sampled = new Promise((r) => (sampleSeen = r));
  const w = watch(cancelRun, { onSample: () => sampleSeen() });
  const deadline = new Promise((r) => setTimeout(r, 240_000));
  await Promise.race([sampled, deadline, w.done]);
  const during = rehearsal ? null : gpus().list;
  const t0 = Date.now();
  const c = await call('POST', `/api/runs/${cancelRun}/cancel`, {
    token,
    body: { reason: 'gpu-smoke: cancel check' },
  });
  const run = await w.done;
  const stopSecs = (Date.now() - t0) / 1000;
  let freed = null;
  if (!rehearsal) {
    for (let i = 0; i < 60; i++) {
      const now = gpus().list;
      const apps = spawnSync(
        'nvidia-smi',
        ['--query-compute-apps=pid,used_memory', '--format=csv,noheader'],
        {
          encoding: 'utf8',
        },
      ).stdout.trim();
      freed = { now, apps };
      if (now.every((g, k) => g.usedMiB <= (before[k]?.usedMiB ?? 0) + 512) && !apps) break;
      await new Promise((r) => setTimeout(r, 500));
    }
  }
  const memLine = rehearsal
    ? ''
    : `; GPU memory used: ${before.map((g) => g.usedMiB).join('/')} MiB before, ${during.map((g) => g.usedMiB).join('/')} MiB while running, ${freed.now.map((g) => g.usedMiB).join('/')} MiB after; compute apps after: ${freed.apps || 'none'}`;
  const memOk =
    rehearsal || (freed.now.every((g, k) => g.usedMiB <= (before[k]?.usedMiB ?? 0) + 512) && !freed.apps);
  rows.push({
    label: 'cancel while sampling',
    mode: 'public',
    expected: 'canceled',
    got: run.status,
    score: null,
    secs: stopSecs,
    live: `${w.seen.logs} lines, ${w.seen.samples} samples`,
    detail: memLine.slice(2),
  });
  record(
    'cancel of a running run',
    c.status < 300 && run.status === 'canceled' && memOk,
    `canceled after ${w.seen.samples} sample event(s); stopped ${stopSecs.toFixed(1)} s after the request${memLine}`,
  );
}

// ---- The harness's own cost per step, as its trusted parent measured it in the fast official run:
// the parent's handling of each step (receive, stamp, check) and the child's framing, both on the
// GPU's critical path, against the engine's TPOT in the same run. Unlike the in-process comparison
// below, this needs no second measurement that the VM's drift could move.
if (!rehearsal && fastResult?.run.status === 'succeeded') {
  const m = fastResult.result.metrics ?? {};
  const perStepUs = (m.harnessParentUsPerStep ?? NaN) + (m.harnessChildUsPerStep ?? 0);
  const tpots = fastResult.result.workloads.map((x) => x.tpotMs).filter((t) => t != null);
  const fastest = Math.min(...tpots);
  const pct = (perStepUs / 1000 / fastest) * 100;
  record(
    'harness cost per step (measured by the harness in the run) ≤ 1% of the fast TPOT',
    Number.isFinite(pct) && pct <= 1,
    `parent ${m.harnessParentUsPerStep?.toFixed(1) ?? '-'} µs + child framing ${m.harnessChildUsPerStep?.toFixed(1) ?? '-'} µs per step = ${pct.toFixed(3)}% of the fastest workload's TPOT (${fastest.toFixed(3)} ms)`,
  );
}

// ---- 9. The harness's cost per step: the fast engine in-process vs through the whole agent path -------
if (!rehearsal && fastResult?.run.status === 'succeeded') {
  const wls = readFileSync(path.join(benchDir, `${benchId}.yaml`), 'utf8')
    .split('\n')
    .filter((l) => /batchSize/.test(l) && !/ h-|s-h-/.test(l))
    .map((l) => ({
      name: /name: ([\w-]+)/.exec(l)[1],
      batch: Number(/batchSize: (\d+)/.exec(l)[1]),
      prompt: Number(/promptLength: (\d+)/.exec(l)[1]),
      tokens: Number(/maxNewTokens: (\d+)/.exec(l)[1]),
      seed: Number(/seed: (\d+)/.exec(l)[1]),
    }));
  const hidden = readFileSync(path.join(benchDir, `${benchId}.yaml`), 'utf8').split('hidden:')[1] ?? '';
  const hiddenWls = hidden
    .split('\n')
    .filter((l) => /batchSize/.test(l))
    .map((l) => ({
      name: /name: ([\w-]+)/.exec(l)[1],
      batch: Number(/batchSize: (\d+)/.exec(l)[1]),
      prompt: Number(/promptLength: (\d+)/.exec(l)[1]),
      tokens: Number(/maxNewTokens: (\d+)/.exec(l)[1]),
      seed: Number(/seed: (\d+)/.exec(l)[1]),
    }));
  // Official runs measure the hidden workloads: time those in-process the same way.
  const targets = hiddenWls.filter((h) => fastResult.result.workloads.some((x) => x.workload === h.name));
  const r = spawnSync(
    python,
    [
      path.join(root, 'scripts/gpu-smoke-inprocess.py'),
      modelDir,
      fastDir,
      JSON.stringify(targets.length ? targets : wls),
    ],
    { encoding: 'utf8', timeout: 300_000, env: { ...process.env, CUDA_VISIBLE_DEVICES: gpu.list[0].index } },
  );
  if (r.status !== 0)
    record('harness cost per step', false, `in-process timing failed: ${(r.stderr || '').slice(-1500)}`);
  else {
    const inproc = JSON.parse(r.stdout.trim().split('\n').pop());
    const parts = [];
    let worst = -Infinity;
    let best = Infinity;
    for (const x of fastResult.result.workloads) {
      const ip = inproc[x.workload];
      if (ip == null || x.tpotMs == null) continue;
      const diff = x.tpotMs - ip;
      worst = Math.max(worst, (diff / ip) * 100);
      best = Math.min(best, (diff / ip) * 100);
      parts.push(
        `${x.workload}: in-process ${ip.toFixed(4)} ms, through hub+agent+sandbox+harness ${x.tpotMs.toFixed(4)} ms (${diff >= 0 ? '+' : ''}${(diff * 1000).toFixed(1)} µs, ${((diff / ip) * 100).toFixed(2)}%)`,
      );
    }
    // Through the agent may not be cheaper than in-process by more than noise either: a reference
    // that is much slower (another process state, clocks) says nothing about the harness's cost.
    // An in-process reference much slower than the run itself (another process state, the VM's
    // clocks) bounds nothing: reported as INFO; the harness's own measurement above decides.
    const inconclusive = parts.length > 0 && worst <= 1 && best < -1;
    if (inconclusive)
      parts.push(
        'INCONCLUSIVE: the in-process reference was slower than the run itself, so it bounds nothing',
      );
    record(
      'harness cost per step vs the fast engine in-process',
      inconclusive ? 'info' : parts.length > 0 && worst <= 1 && best >= -1,
      parts.join('; '),
    );
  }
}

function printTable() {
  const line = (cells) => `| ${cells.join(' | ')} |`;
  const out = [
    '',
    `gpu-smoke ${rehearsal ? '(CPU rehearsal, toy-decode)' : full ? '(FULL definition)' : '(SMOKE PROFILE)'}: ${benchId} on ${gpu.list.map((g) => g.name).join(', ') || 'CPU'}${gpu.list[0] ? `, driver ${gpu.list[0].driver}` : ''}`,
    line(['run', 'mode', 'expected', 'verdict', 'score', 'seconds', 'live to watcher', 'figures']),
    line(['---', '---', '---', '---', '---', '---', '---', '---']),
    ...rows.map((r) =>
      line([
        r.label,
        r.mode,
        r.expected,
        r.got,
        r.score == null ? '-' : r.score.toFixed(2),
        r.secs.toFixed(1),
        r.live,
        r.detail,
      ]),
    ),
    '',
    line(['check', 'result', 'detail']),
    line(['---', '---', '---']),
    ...results.map((r) => line([r.check, verdictWord(r.ok), r.detail.replace(/\n/g, ' ').slice(0, 600)])),
    '',
    failed ? 'gpu-smoke: FAILED (see the FAIL rows)' : 'gpu-smoke: all checks passed',
  ].join('\n');
  console.log(out);
  if (outDir) writeFileSync(path.join(outDir, 'gpu-smoke-table.md'), `${out}\n`);
}
await finish(failed ? 1 : 0);
