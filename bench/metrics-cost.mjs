#!/usr/bin/env node
// What the hub's metrics (issue 34) cost the work they watch, in CPU time, in one process: the part
// a noisy shared box can measure to a few percent, where the latency benches swing far more than 2 %
// from one run to the next (bench/ab.mjs, bench/RESULTS.md). Not a test: it prints a table.
//
// 1. Per stored batch: the metrics' own subscribers on the event bus (lines stored, batch latency),
//    this tree's HubMetrics (apps/api/dist) on a real EventBus, against the same bus with nothing
//    subscribed. Rounds alternate; CPU time (process.cpuUsage) per batch, median of the rounds.
// 2. Process-wide: the default metrics the hub registers (event-loop delay monitor, process gauges;
//    apps/api/src/metrics/default-metrics.ts) are on in every process that collects; nothing else
//    runs per public read (every hub gauge is computed on a scrape). A child process parses and
//    serialises log batches (what storing and serving lines does to the heap and the GC) with the
//    hub's default metrics, with every prom-client default (the GC observer too), and with none,
//    the order rotating; CPU time of the same work.
//
//   npm run build && node bench/metrics-cost.mjs
// Settings (env): BENCH_ROUNDS (10), BENCH_BATCHES (20000 per round and side), BENCH_LINES (50 per
// batch), BENCH_CHILD_ITERATIONS (20000 batches parsed per child run).
import { spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const require = createRequire(import.meta.url);
const here = path.dirname(fileURLToPath(import.meta.url));
const dist = path.join(here, '..', 'apps', 'api', 'dist');
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 10);
const BATCHES = Number(process.env.BENCH_BATCHES ?? 20000);
const LINES = Number(process.env.BENCH_LINES ?? 50);
const CHILD_ITERATIONS = Number(process.env.BENCH_CHILD_ITERATIONS ?? 20000);

const batchLines = (n) =>
  Array.from({ length: n }, (_, i) => ({
    n: i + 1,
    ts: new Date(1_796_000_000_000 + i).toISOString(),
    stream: 'stdout',
    text: `step ${i}: loss 0.${String(i).padStart(4, '0')} tokens/s 12345.6`,
  }));
const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
const cpuUs = () => {
  const u = process.cpuUsage();
  return u.user + u.system;
};

// ---- the child of part 2 ----------------------------------------------------------------------
if (process.argv[2] === '--child') {
  const side = process.argv[3];
  if (side === 'all') {
    const { collectDefaultMetrics, Registry } = require(require.resolve('prom-client', { paths: [dist] }));
    collectDefaultMetrics({ register: new Registry() });
  } else if (side === 'hub') {
    const { Registry } = require(require.resolve('prom-client', { paths: [dist] }));
    const { collectDefaultMetricsButGc } = require(path.join(dist, 'metrics', 'default-metrics.js'));
    collectDefaultMetricsButGc(new Registry());
  }
  const json = JSON.stringify({ runId: 'r', seq: 1, lines: batchLines(LINES) });
  let keep = 0;
  const t0 = cpuUs();
  for (let i = 0; i < CHILD_ITERATIONS; i++) {
    const batch = JSON.parse(json);
    keep += JSON.stringify(batch.lines).length;
    // yield now and then, so the event-loop monitor and the GC observer get their turns
    if (i % 500 === 0) await new Promise((r) => setImmediate(r));
  }
  process.stdout.write(JSON.stringify({ cpuUs: cpuUs() - t0, keep }));
  process.exit(0);
}

// ---- part 1: the subscribers per stored batch ---------------------------------------------------
require('reflect-metadata');
const { EventBus } = require(path.join(dist, 'common', 'event-bus.js'));
const { HubMetrics } = require(path.join(dist, 'metrics', 'hub-metrics.js'));

const watched = new EventBus();
const benchmarks = { all: () => [] }; // gauges read the registry on a scrape only
const metrics = new HubMetrics(watched, {}, {}, {}, { now: () => new Date() }, benchmarks, {
  METRICS_ENABLED: true,
});
metrics.onModuleInit();
const bare = new EventBus();
const lines = batchLines(LINES);

async function storeBatches(bus) {
  const t0 = cpuUs();
  for (let i = 0; i < BATCHES; i++) {
    // what RunLifecycleService.storeBatch emits for every batch it stores
    bus.emit('run.logs', { runId: 'r', lines });
    bus.emit('run.batch_handled', { runId: 'r', seconds: 0.0021 });
    if (i % 200 === 199) await new Promise((r) => setImmediate(r));
  }
  await new Promise((r) => setImmediate(r));
  return (cpuUs() - t0) / BATCHES;
}

const perBatch = { on: [], off: [] };
await storeBatches(watched); // warm both paths up
await storeBatches(bare);
for (let round = 0; round < ROUNDS; round++) {
  const order = round % 2 ? ['off', 'on'] : ['on', 'off'];
  for (const side of order) perBatch[side].push(await storeBatches(side === 'on' ? watched : bare));
}
const stored = (await metrics.registry.getSingleMetric('dryft_log_lines_stored_total')?.get())?.values?.[0]
  ?.value;
metrics.onModuleDestroy();

// ---- part 2: default metrics, process-wide -------------------------------------------------------
const child = (side) => {
  const r = spawnSync(process.execPath, [fileURLToPath(import.meta.url), '--child', side], {
    encoding: 'utf8',
    env: process.env,
  });
  if (r.status !== 0) throw new Error(`child ${side}: ${r.stderr}`);
  return JSON.parse(r.stdout).cpuUs / CHILD_ITERATIONS;
};
// 'hub': what HubMetrics registers (default-metrics.ts: all but the GC histogram); 'all': every
// prom-client default; 'off': none. The order rotates every round.
const SIDES = ['hub', 'all', 'off'];
const perParse = { hub: [], all: [], off: [] };
for (let round = 0; round < Math.max(6, Math.ceil(ROUNDS / 2)); round++) {
  for (let k = 0; k < SIDES.length; k++) {
    const side = SIDES[(round + k) % SIDES.length];
    perParse[side].push(child(side));
  }
}

const on = median(perBatch.on);
const off = median(perBatch.off);
const deltas = perBatch.on.map((x, i) => x - perBatch.off[i]);
const ratiosOf = (side) => perParse[side].map((x, i) => x / perParse.off[i]);
const fmt = (x) => x.toFixed(2);
console.log(`# bench/metrics-cost.mjs

Machine: ${os.cpus().length} cores (${os.cpus()[0]?.model ?? 'unknown CPU'}), Node ${process.version}; load average at the end ${os
  .loadavg()
  .map((x) => x.toFixed(2))
  .join(', ')}. ${ROUNDS} rounds, the order alternating; CPU time.

| measurement | with metrics | without | difference |
| --- | --- | --- | --- |
| per stored batch of ${LINES} lines: the event bus's emits (µs CPU, median of ${ROUNDS}) | ${fmt(on)} | ${fmt(off)} | ${fmt(on - off)} µs (per round: ${deltas.map(fmt).join(', ')}); lines counted ${stored ?? '?'} |
${['hub', 'all']
  .map(
    (side) =>
      `| per batch parsed and serialised, ${side === 'hub' ? "the hub's default metrics (all but the GC histogram)" : 'every prom-client default metric (the GC histogram too)'} against none (µs CPU, median of ${perParse[side].length}) | ${fmt(median(perParse[side]))} | ${fmt(median(perParse.off))} | ×${median(ratiosOf(side)).toFixed(3)} (per round: ${ratiosOf(
        side,
      )
        .map((x) => x.toFixed(3))
        .join(', ')}) |`,
  )
  .join('\n')}
`);
