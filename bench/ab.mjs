#!/usr/bin/env node
// Side by side: the same build of the hub with two settings, `npm run bench`'s parts run for each in
// alternating order (A B, B A, …), each figure as the bench's own ratio to the bare relay or server
// of that same run, then A's ratio over B's per pair. The ratios to a bare server measured in the
// same minute are what a noisy shared box can compare; one sample never is.
//
//   node bench/ab.mjs                      # A: as configured, B: METRICS_ENABLED=false
//   BENCH_AB_B="METRICS_ENABLED=false" BENCH_AB_PAIRS=2 BENCH_AB_PARTS=lines,reads node bench/ab.mjs
//
// Needs `npm run build` first (npm run bench:ab does both). Writes .data/bench-ab.latest.md.
import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..');
const A = process.env.BENCH_AB_A ?? '';
// BENCH_AB_MAIN_B: side B runs another build (its apps/api/dist/main.js, e.g. an earlier commit's
// built in a worktree); then B's settings default to none.
const MAIN_B = process.env.BENCH_AB_MAIN_B ?? '';
const B = process.env.BENCH_AB_B ?? (MAIN_B ? '' : 'METRICS_ENABLED=false');
const PAIRS = Number(process.env.BENCH_AB_PAIRS ?? 2);
const PARTS = process.env.BENCH_AB_PARTS ?? 'lines,reads';
const sideLabel = (side) =>
  side === 'B' && MAIN_B ? `${MAIN_B}${B ? ` with ${B}` : ''}` : (side === 'A' ? A : B) || '(as configured)';
const MEDIAN = ": median of the pairs' ratios";

/** One `bench/run.mjs` run with the API's settings `env`: its "median of the pairs' ratios" rows. */
function benchOnce(side) {
  console.log(`[ab] bench --only ${PARTS}, side ${side}: ${sideLabel(side)}`);
  const env = { ...process.env, BENCH_API_ENV: side === 'A' ? A : B };
  if (side === 'B' && MAIN_B) env.BENCH_API_MAIN = MAIN_B;
  else delete env.BENCH_API_MAIN;
  const r = spawnSync(process.execPath, [path.join(root, 'bench/run.mjs'), '--only', PARTS], {
    cwd: root,
    stdio: ['ignore', 'inherit', 'inherit'],
    env,
  });
  if (r.status !== 0) throw new Error(`bench/run.mjs exited with ${r.status} (side ${side})`);
  const { rows } = JSON.parse(readFileSync(path.join(root, '.data/bench-rows.replicas-1.json'), 'utf8'));
  const out = {};
  for (const [name, , , target] of rows) {
    if (!name.endsWith(MEDIAN)) continue;
    const m = /^([\d.]+)×/.exec(String(target));
    if (m) out[name.slice(0, -MEDIAN.length)] = Number(m[1]);
  }
  // Throughput: lines persisted per second over the relay's lines relayed (not stored) in that run.
  const persisted = rows.find(([name]) => String(name).startsWith('lines/s persisted'));
  const relayed = persisted ? Number(/^\d+/.exec(String(persisted[2]))?.[0]) : NaN;
  if (persisted && relayed)
    out['lines/s persisted ÷ relayed'] = Number((Number(persisted[1]) / relayed).toFixed(3));
  // The API's CPU per 1,000 lines persisted (ms), as measured (no bare pair).
  const cpu = rows.find(([name]) => String(name).startsWith('CPU ms per 1,000 lines persisted'));
  const apiMs = cpu ? Number(/^[\d.]+/.exec(String(cpu[1]))?.[0]) : NaN;
  if (Number.isFinite(apiMs)) out['API CPU ms per 1,000 lines (absolute)'] = apiMs;
  return out;
}

const runs = [];
for (let p = 0; p < PAIRS; p++) {
  const order = p % 2 === 0 ? ['A', 'B'] : ['B', 'A'];
  const pair = {};
  for (const side of order) pair[side] = benchOnce(side);
  runs.push(pair);
}

const names = [...new Set(runs.flatMap((r) => [...Object.keys(r.A), ...Object.keys(r.B)]))];
const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length
    ? s.length % 2
      ? s[(s.length - 1) / 2]
      : (s[s.length / 2 - 1] + s[s.length / 2]) / 2
    : NaN;
};
const lines = [
  `| measurement | ${runs.map((_, i) => `pair ${i + 1}: A / B`).join(' | ')} | A ÷ B per pair | median A ÷ B |`,
  `| --- | ${runs.map(() => '---').join(' | ')} | --- | --- |`,
];
for (const name of names) {
  const quotients = runs.map((r) => r.A[name] / r.B[name]).filter((x) => Number.isFinite(x));
  lines.push(
    `| ${name} | ${runs.map((r) => `${r.A[name] ?? '—'} / ${r.B[name] ?? '—'}`).join(' | ')} | ${quotients.map((q) => q.toFixed(3)).join(', ')} | ${median(quotients).toFixed(3)} |`,
  );
}
const cpu = os.cpus()[0]?.model ?? 'unknown CPU';
const md = `# bench/ab.mjs\n\nA: ${sideLabel('A')}; B: ${sideLabel('B')}. Parts: ${PARTS}; ${PAIRS} pairs, the order alternating. Machine: ${os.cpus().length} cores (${cpu}), Node ${process.version}; load average at the end ${os
  .loadavg()
  .map((x) => x.toFixed(2))
  .join(
    ', ',
  )}. Each cell is the bench's own ratio to the bare relay or server of that run (lower is better for latency and CPU, higher for throughput); A ÷ B above 1 means A costs more for latency rows.\n\n${lines.join('\n')}\n`;
console.log(`\n${md}`);
mkdirSync(path.join(root, '.data'), { recursive: true });
writeFileSync(path.join(root, '.data/bench-ab.latest.md'), md);
