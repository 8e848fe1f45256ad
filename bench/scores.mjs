#!/usr/bin/env node
// `npm run bench:scores`: can the scores be trusted on a busy machine? Starts the real hub (API +
// local agent, the toy-decode benchmark on the CPU) and a load generator that keeps one core busy,
// then runs BENCH_SCORE_RUNS (10) official runs of the unchanged toy starter and as many of the toy
// examples/fast, alternating, each through the real path (upload, queue, agent, sandboxed harness),
// and in between BENCH_SABOTAGE_RUNS (5) of the idle burner (harness/tests/engines/toy_idle_burner.py:
// the starter whose forked processes burn the CPU while the baseline is timed), which the freezer
// must hold to the starter's range or fail as candidate_error (harness/README.md, "The idle engine
// is frozen").
// Each run is shown beside the same run scored the old way: the candidate's own timed samples
// (its first samples.official of them, median per workload) against the baseline cached once by
// the first official run and reused, unpaired, as the hub did before paired measurement.
// Not a test: it prints a table and writes bench/SCORES.md. Settings (env): BENCH_SCORE_RUNS (10),
// BENCH_SABOTAGE_RUNS (5), BENCH_LOAD (1 busy core; 0 = none, started before K is calibrated),
// BENCH_SCORES_CAL_PARTS (2 calibration runs pooled into K), DATABASE_URL (else embedded Postgres), HARNESS_PYTHON.
import { spawn } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { createServer } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { benchDatabase, User } from './common.mjs';

const require = createRequire(import.meta.url);
const pg = require('pg');
const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..');
const { loadBenchmarkDefinitions } = require(path.join(root, 'libs/dist/node.js'));

const RUNS = Number(process.env.BENCH_SCORE_RUNS ?? 10);
const SABOTAGE_RUNS = Number(process.env.BENCH_SABOTAGE_RUNS ?? 5);
const LOAD = Number(process.env.BENCH_LOAD ?? 1);
const CAL_PARTS = Number(process.env.BENCH_SCORES_CAL_PARTS ?? 2);
const stamp = Date.now();
const dataDir = path.join(root, '.data', `bench-scores-${stamp}`);
const children = [];
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const log = (m) => console.log(`[bench:scores] ${m}`);

function freePort() {
  return new Promise((resolve) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

function startProcess(name, args, env) {
  const merged = { ...process.env, ...env };
  for (const [k, v] of Object.entries(merged)) if (v === '') delete merged[k];
  const child = spawn(process.execPath, args, { cwd: root, env: merged, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  const keep = (c) => {
    out += c;
    if (out.length > 400_000) out = out.slice(-200_000);
  };
  child.stdout.on('data', keep);
  child.stderr.on('data', keep);
  children.push(child);
  child.output = () => out;
  child.on('exit', (code) => code && code !== 143 && log(`${name} exited ${code}: ${out.slice(-2000)}`));
  return child;
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};
const geomean = (xs) => Math.exp(xs.reduce((a, x) => a + Math.log(x), 0) / xs.length);

/** The old way: the cached baseline's medians ÷ the median of the candidate's first `n` timed samples. */
function oldScore(result, cached, n) {
  const names = Object.keys(cached.workloads);
  const ratios = names.map((w) => {
    const own = result.samples.filter((s) => s.workload === w && !s.warmup).slice(0, n);
    return cached.workloads[w].totalMs / median(own.map((s) => s.totalMs));
  });
  return 100 * geomean(ratios);
}

async function main() {
  const def = loadBenchmarkDefinitions(path.join(root, 'config/benchmarks')).find(
    (d) => d.id === 'toy-decode',
  );
  const db = await benchDatabase('dryft_bench_scores', stamp);
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  mkdirSync(dataDir, { recursive: true });
  const tokenFile = path.join(dataDir, 'local-agent.token');
  const env = {
    NODE_ENV: 'development',
    LOG_LEVEL: 'warn',
    DATABASE_URL: db.url,
    PORT: String(port),
    HOST: '127.0.0.1',
    PUBLIC_URL: base,
    DATA_DIR: dataDir,
    LOCAL_AGENT_TOKEN_FILE: tokenFile,
    ADMIN_LOGINS: 'bench-org',
    GITHUB_CLIENT_ID: '',
    GITHUB_CLIENT_SECRET: '',
  };
  const load = [];
  let api;
  let agent;
  try {
    api = startProcess('api', [path.join(root, 'apps/api/dist/main.js')], env);
    for (let i = 0; ; i++) {
      try {
        if ((await fetch(`${base}/api/health`)).ok) break;
      } catch {
        // not listening yet
      }
      if (i > 400) throw new Error(`the API did not start:\n${api.output()}`);
      await sleep(150);
    }
    agent = startProcess('agent', [path.join(root, 'apps/gpu-agent/dist/main.js'), '--local'], {
      ...env,
      DRYFT_API_URL: base,
      DRYFT_AGENT_TOKEN_FILE: tokenFile,
      DRYFT_AGENT_WORK_DIR: path.join(dataDir, 'agent-work'),
    });
    const org = await User.signIn(base, 'bench-org');
    for (let i = 0; ; i++) {
      const agents = await org.req('GET', '/api/admin/agents');
      if (agents.some((a) => a.name === 'local' && a.status === 'online')) break;
      if (i > 400) throw new Error(`the local agent did not come online:\n${agent.output()}`);
      await sleep(150);
    }
    await org.req('POST', '/api/teams', { name: 'Bench Scores' });
    // The sabotage submission: the unchanged starter as base.py, the idle burner as engine.py.
    const sabotageDir = path.join(dataDir, 'idle-burner');
    mkdirSync(sabotageDir, { recursive: true });
    copyFileSync(path.join(root, 'starters/toy-decode/engine/engine.py'), path.join(sabotageDir, 'base.py'));
    copyFileSync(
      path.join(root, 'harness/tests/engines/toy_idle_burner.py'),
      path.join(sabotageDir, 'engine.py'),
    );
    const engines = {
      starter: await org.upload(path.join(root, 'starters/toy-decode/engine')),
      fast: await org.upload(path.join(root, 'starters/toy-decode/examples/fast')),
      sabotage: await org.upload(sabotageDir),
    };
    // The busy cores first: K is calibrated under the load the official runs see, as an organizer
    // calibrates on the boxes that run them (K drawn on a quiet box read the starter ~4 % low here).
    for (let i = 0; i < LOAD; i++) {
      const busy = spawn(process.execPath, ['-e', 'for(;;){}'], { stdio: 'ignore' });
      children.push(busy);
      load.push(busy);
    }
    // K first (BENCH_SCORES_CALIBRATE, default on): an organizer's calibration run of the baseline
    // against the reference engine on this machine, so that every official run below pairs with
    // the reference and is scored through K. With 0 they pair with the baseline as before.
    let calibration = null;
    if (process.env.BENCH_SCORES_CALIBRATE !== '0') {
      const t0 = Date.now();
      // Two parts by default: the pooled K's interval then carries the spread between calibration
      // runs (libs poolCalibration), which one run cannot show (6-8 % on this box, bench/SCORES.md).
      const { runs: parts } = await org.req('POST', '/api/admin/benchmarks/toy-decode/baselines/remeasure', {
        mode: 'calibration',
        reason: 'bench:scores',
        parts: CAL_PARTS,
      });
      for (const part of parts) {
        let view = part;
        while (!['succeeded', 'failed', 'canceled'].includes(view.status)) {
          await sleep(500);
          view = await org.req('GET', `/api/runs/${part.id}`);
        }
        if (view.status !== 'succeeded') throw new Error(`the calibration run failed: ${view.message}`);
      }
      const listed = await org.req('GET', '/api/admin/benchmarks/toy-decode/baselines');
      calibration = listed.calibrations.find((c) => c.hardware === 'cpu') ?? null;
      log(
        `K calibrated in ${((Date.now() - t0) / 1000).toFixed(0)} s: ${JSON.stringify(calibration?.workloads)} ±${calibration?.halfWidthPct?.toFixed(2)} %`,
      );
    }
    log(
      `${LOAD} busy core(s) started; ${RUNS} official runs each of the starter and examples/fast, alternating` +
        ` (and ${SABOTAGE_RUNS} of the idle burner among them)`,
    );
    const pgc = new pg.Client({ connectionString: db.url });
    await pgc.connect();
    let cached = null;
    const rows = [];
    for (let i = 0; i < Math.max(RUNS, SABOTAGE_RUNS); i++) {
      const kinds = [...(i < RUNS ? ['starter', 'fast'] : []), ...(i < SABOTAGE_RUNS ? ['sabotage'] : [])];
      for (const which of kinds) {
        const t0 = Date.now();
        const { run } = await org.req('POST', `/api/submissions/${engines[which]}/runs`, {
          mode: 'official',
          confirm: true,
        });
        let view = run;
        while (!['succeeded', 'failed', 'canceled'].includes(view.status)) {
          await sleep(250);
          view = await org.req('GET', `/api/runs/${run.id}`);
        }
        const wallS = (Date.now() - t0) / 1000;
        const result = await org.req('GET', `/api/runs/${run.id}/result`);
        if (process.env.BENCH_SCORES_LOGS) {
          const logs = await org.req('GET', `/api/runs/${run.id}/logs?after=0&limit=5000`);
          writeFileSync(
            path.join(process.env.BENCH_SCORES_LOGS, `${which}-${i + 1}.log`),
            logs.items.map((l) => l.text).join('\n'),
          );
        }
        if (!cached) {
          // The old way cached the first measured baseline and reused it for every later run.
          const r = await pgc.query(`SELECT figures FROM baselines WHERE benchmark_id = 'toy-decode'`);
          cached = r.rows[0]?.figures ?? null;
        }
        const row = {
          which,
          i: i + 1,
          status: view.status,
          failureCode: view.failureCode,
          score: result.score,
          interval: result.interval,
          absolute: result.absoluteInterval ?? null,
          against: result.scoring?.against ?? null,
          pairs: result.pairs,
          old: cached && result.samples.length ? oldScore(result, cached, def.samples.official) : null,
          wallS,
          harnessS:
            view.startedAt && view.finishedAt
              ? (Date.parse(view.finishedAt) - Date.parse(view.startedAt)) / 1000
              : null,
        };
        rows.push(row);
        log(
          `${which} #${row.i}: ${row.status}${row.failureCode ? ` (${row.failureCode})` : ''} score ${row.score?.toFixed(2) ?? '-'}` +
            (row.interval
              ? ` ± ${row.interval.halfWidth.toFixed(2)} [${row.interval.low.toFixed(2)}, ${row.interval.high.toFixed(2)}]`
              : '') +
            `, ${row.pairs ?? '-'} pairs, old way ${row.old?.toFixed(2) ?? '-'}, ${wallS.toFixed(1)} s`,
        );
      }
    }
    await pgc.end();
    writeReport(rows, def, calibration);
  } finally {
    for (const c of load) c.kill('SIGKILL');
    for (const c of [agent, api]) {
      if (!c || c.exitCode !== null) continue;
      c.kill('SIGTERM');
      await Promise.race([new Promise((r) => c.once('exit', r)), sleep(8000)]);
      if (c.exitCode === null) c.kill('SIGKILL');
    }
    await db.drop().catch(() => undefined);
    rmSync(dataDir, { recursive: true, force: true });
  }
}

function writeReport(rows, def, calibration) {
  const fmt = (x, d = 2) => (x === null || x === undefined ? '—' : x.toFixed(d));
  const starter = rows.filter((r) => r.which === 'starter');
  const fast = rows.filter((r) => r.which === 'fast');
  const sabotage = rows.filter((r) => r.which === 'sabotage');
  const ok = (r) => r.status === 'succeeded' && r.score !== null;
  const within5 = starter.filter((r) => ok(r) && Math.abs(r.score - 100) <= 5).length;
  const contains = starter.filter((r) => ok(r) && r.interval.low <= 100 && 100 <= r.interval.high).length;
  // "100" is the baseline's score only through K: the interval that should hold it is the absolute
  // one (K's uncertainty folded in). The ranking interval leaves K out on purpose (it is shared by
  // every team on a board), so it is shown too, but cannot be asked to hold an absolute 100.
  const absIv = (r) => r.absolute ?? r.interval;
  const containsAbs = starter.filter((r) => ok(r) && absIv(r).low <= 100 && 100 <= absIv(r).high).length;
  const fastScores = fast.filter(ok).map((r) => r.score);
  const fastMed = fastScores.length ? median(fastScores) : null;
  const fastWithin = fastScores.filter((s) => Math.abs(s / fastMed - 1) <= 0.05).length;
  const spread = (xs) => (xs.length ? `${fmt(Math.min(...xs))}–${fmt(Math.max(...xs))}` : '—');
  const oldStarter = starter.map((r) => r.old).filter((x) => x !== null);
  const oldFast = fast.map((r) => r.old).filter((x) => x !== null);
  const oldFastMed = oldFast.length ? median(oldFast) : null;
  // The honest engine's range: the starter's lowest to highest paired score (and interval) here.
  const honest = starter.filter(ok);
  const honestLow = honest.length ? Math.min(...honest.map((r) => Math.min(r.score, r.interval.low))) : null;
  const honestHigh = honest.length
    ? Math.max(...honest.map((r) => Math.max(r.score, r.interval.high)))
    : null;
  const held = sabotage.filter(
    (r) =>
      (r.status === 'failed' && r.failureCode === 'candidate_error') ||
      (ok(r) && honestLow !== null && r.score >= honestLow && r.score <= honestHigh),
  ).length;
  const table = (list) =>
    [
      '| # | status | score (paired) | 95 % ranking interval | ± | absolute (with K) | against | pairs | old way (cached baseline, unpaired) | wall time (s) | harness (s) |',
      '| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |',
      ...list.map(
        (r) =>
          `| ${r.i} | ${r.status}${r.failureCode ? ` (${r.failureCode})` : ''} | ${fmt(r.score)} | ${r.interval ? `${fmt(r.interval.low)}–${fmt(r.interval.high)}` : '—'} | ${fmt(r.interval?.halfWidth)} | ${r.absolute ? `${fmt(r.absolute.low)}–${fmt(r.absolute.high)}` : '—'} | ${r.against ?? '—'} | ${r.pairs ?? '—'} | ${fmt(r.old)} | ${fmt(r.wallS, 1)} | ${fmt(r.harnessS, 1)} |`,
      ),
    ].join('\n');
  // The run-to-run spread these runs show beyond their pairs' own noise (harness/README.md,
  // "Run-to-run spread"): the scores' variance less the mean squared bootstrap standard error,
  // the definition's spread taken back out of each reported half-width first.
  const stated = def.samples.runSpreadPct ?? 0;
  const z = 1.959964;
  const runSpread = (list) => {
    const got = list.filter((r) => ok(r) && r.interval);
    if (got.length < 3) return null;
    const med = median(got.map((r) => r.score));
    const rel = got.map((r) => (r.score / med) * 100);
    const mean = rel.reduce((a, b) => a + b, 0) / rel.length;
    const variance = rel.reduce((a, b) => a + (b - mean) ** 2, 0) / (rel.length - 1);
    const se2 =
      got
        .map((r) => {
          const total = Math.log1p(r.interval.halfWidth / r.score);
          const boot = Math.sqrt(Math.max(0, total ** 2 - (z * Math.log1p(stated / 100)) ** 2));
          return ((Math.expm1(boot) * 100) / z) ** 2;
        })
        .reduce((a, b) => a + b, 0) / got.length;
    return Math.sqrt(Math.max(0, variance - se2));
  };
  const cpu = os.cpus()[0]?.model ?? 'unknown CPU';
  const md = `# Score trust: paired measurement on a busy machine (\`npm run bench:scores\`)

Written by \`bench/scores.mjs\` on ${new Date().toISOString()}. Machine: ${os.cpus().length} cores (${cpu}),
${Math.round(os.totalmem() / 2 ** 30)} GiB, load average at the end ${os
    .loadavg()
    .map((x) => x.toFixed(1))
    .join(' / ')}.
The bench adds ${LOAD} busy core(s) of its own (a \`node -e 'for(;;){}'\` load generator).
${process.env.BENCH_SCORES_NOTE ? `\n${process.env.BENCH_SCORES_NOTE}\n` : ''}
${
  calibration
    ? `K (baseline ÷ reference time, per workload) was calibrated first through the hub (an organizer's calibration, ${calibration.runs ?? 1} run(s) pooled, on this machine under the bench's busy core(s)): ${Object.entries(
        calibration.workloads,
      )
        .map(([w, k]) => `${w} ${fmt(k.k, 3)} (${fmt(k.low, 3)}–${fmt(k.high, 3)})`)
        .join(
          ', ',
        )}, ±${fmt(calibration.halfWidthPct)} % from ${calibration.pairs} pairs; every official run below pairs the candidate with the **reference engine** and scores 100 × geomean(K × reference ÷ candidate) (the "baseline" of the text below is then the reference).`
    : 'No calibration (BENCH_SCORES_CALIBRATE=0): every run pairs with the baseline engine.'
}

Each row is one official toy-decode run through the real hub and local agent (upload, queue,
sandboxed harness). **Paired** (the score the hub now records): the baseline engine runs beside the
candidate and every timed candidate sample has a baseline sample next to it (AB, BA, …); per workload
the median of baseline ÷ candidate over the pairs, ${def.samples.official} to ${def.samples.maxPairs} pairs until the pairs' 95 %
bootstrap interval is within ± ${def.samples.targetHalfWidthPct} %; the interval reported (and shown here) adds the
definition's run-to-run spread of ${stated} % in quadrature (harness/README.md, "Run-to-run spread"). **Old way**: the same run's first ${def.samples.official} timed
candidate samples (median per workload) against the baseline cached by the first official run and
reused, as the hub did before: the candidate measured minutes apart from its baseline.

## Unchanged starter (true score 100)

${table(starter)}

Paired: ${within5} of ${starter.length} within 100 ± 5 (target: all); the absolute interval (with K's) contains 100 in ${containsAbs} of ${starter.length} (target: ≥ 9); the ranking interval (K left out) in ${contains} of ${starter.length}.
Paired scores ${spread(starter.filter(ok).map((r) => r.score))}; old way ${spread(oldStarter)}. Run-to-run spread beyond the pairs: ${fmt(runSpread(starter))} % (the definition states ${stated} %).

## examples/fast

${table(fast)}

Paired: median ${fmt(fastMed)}, ${fastWithin} of ${fastScores.length} within ± 5 % of it (target: all).
Paired scores ${spread(fastScores)}; old way ${spread(oldFast)}${oldFastMed ? ` (median ${fmt(oldFastMed)}, ${oldFast.filter((s) => Math.abs(s / oldFastMed - 1) <= 0.05).length} of ${oldFast.length} within ± 5 %)` : ''}. Run-to-run spread beyond the pairs: ${fmt(runSpread(fast))} %.

## Sabotage: the idle burner (true score 100)

The unchanged starter plus three forked processes that burn the CPU only while it is idle, that is
while the baseline's samples are timed (\`harness/tests/engines/toy_idle_burner.py\`; before the
freezer it scored 144–147 here and took rank 1). The harness freezes every process of the idle
engine around every sample and checks its CPU time (harness/README.md, "The idle engine is frozen").

${table(sabotage)}

${held} of ${sabotage.length} within the starter's range here (${fmt(honestLow)}–${fmt(honestHigh)}, its scores and intervals) or failed \`candidate_error\` (target: all).
`;
  // The newest run on top; every earlier run (and what was read from it) stays below, as written.
  const file = path.join(root, 'bench/SCORES.md');
  const earlier = existsSync(file) ? readFileSync(file, 'utf8').replace(/^# [^\n]*\n/, '') : '';
  writeFileSync(file, earlier ? `${md}\n---\n\n# Earlier runs (as written then)\n${earlier}` : md);
  console.log(md);
}

main().catch((err) => {
  console.error(err);
  for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
  process.exit(1);
});
