#!/usr/bin/env node
// What share of a process's busy CPU went to some code, from a V8 CPU profile (`--cpu-prof`): the
// samples whose stack passes through a file matching one of the patterns, over every sample that
// was not idle. Module loading (a stack through Module._compile) is start-up, not the workload, and
// is counted apart. A profile's shares hold on a loaded box, where side-by-side latencies swing far
// more than the 2 % a small cost must be shown under (bench/RESULTS.md).
//
//   BENCH_API_NODE_ARGS="--cpu-prof --cpu-prof-dir=/tmp/p" node bench/run.mjs --only lines
//   node bench/profile-share.mjs /tmp/p/CPU.*.0.001.cpuprofile hub-metrics,prom-client,default-metrics
import { readFileSync } from 'node:fs';

const [file, patternList] = process.argv.slice(2);
if (!file || !patternList) {
  console.error('usage: node bench/profile-share.mjs PROFILE.cpuprofile PATTERN[,PATTERN…]');
  process.exit(2);
}
const patterns = patternList.split(',').filter(Boolean);
const profile = JSON.parse(readFileSync(file, 'utf8'));
const nodes = new Map(profile.nodes.map((n) => [n.id, n]));
const parent = new Map();
for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);

const timeOf = new Map();
profile.samples.forEach((id, i) => timeOf.set(id, (timeOf.get(id) ?? 0) + profile.timeDeltas[i]));

let idle = 0;
let total = 0;
const byPattern = Object.fromEntries(patterns.map((p) => [p, { work: 0, loading: 0 }]));
for (const [id, us] of timeOf) {
  total += us;
  const name = nodes.get(id).callFrame.functionName;
  if (name === '(idle)') {
    idle += us;
    continue;
  }
  const hit = new Set();
  let loading = false;
  for (let x = id; x !== undefined; x = parent.get(x)) {
    const frame = nodes.get(x).callFrame;
    if (frame.functionName === 'Module._compile') loading = true;
    for (const p of patterns) if (frame.url.includes(p)) hit.add(p);
  }
  for (const p of hit) byPattern[p][loading ? 'loading' : 'work'] += us;
}
const busy = total - idle;
const ms = (us) => (us / 1000).toFixed(1);
console.log(`${file}: ${ms(busy)} ms busy of ${ms(total)} ms profiled`);
for (const [p, { work, loading }] of Object.entries(byPattern))
  console.log(
    `${p}: ${ms(work)} ms = ${((100 * work) / busy).toFixed(3)} % of busy CPU (plus ${ms(loading)} ms loading at start-up)`,
  );
