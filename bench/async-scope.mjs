#!/usr/bin/env node
// What one AsyncLocalStorage.run costs every later await in the process (the request-id scope of
// JSON logs, apps/api/src/common/logging.ts withRequestId). Pairs of child processes, alternating:
// one awaits without ever opening a scope, the other after opening one (as the first HTTP request
// of a hub with JSON logs does); each reports its median of 5 timed rounds. Not part of
// `npm run bench`'s sockets: run it alone, `node bench/async-scope.mjs` (BENCH_SCOPE_PAIRS, 5),
// under each Node to compare (`.data/node-24.*` holds the one CI uses).
import { spawnSync } from 'node:child_process';
import os from 'node:os';

const PAIRS = Number(process.env.BENCH_SCOPE_PAIRS ?? 5);
const AWAITS = 1_000_000;

if (process.argv[2] === 'child') {
  const { AsyncLocalStorage } = await import('node:async_hooks');
  if (process.argv[3] === 'scoped') new AsyncLocalStorage().run({ requestId: 'x' }, () => undefined);
  const leaf = async (i) => i;
  const round = async () => {
    const t = process.hrtime.bigint();
    let s = 0;
    for (let i = 0; i < AWAITS; i++) s += await leaf(i);
    if (s < 0) throw new Error('unreachable');
    return Number(process.hrtime.bigint() - t) / 1e6;
  };
  await round(); // warm-up
  const ms = [];
  for (let k = 0; k < 5; k++) ms.push(await round());
  ms.sort((a, b) => a - b);
  console.log(JSON.stringify({ ms: ms[2] }));
} else {
  const run = (mode) =>
    JSON.parse(
      spawnSync(process.execPath, [new URL(import.meta.url).pathname, 'child', mode]).stdout.toString(),
    ).ms;
  const ratios = [];
  console.log(
    `[async-scope] Node ${process.version}, ${os.cpus().length} cores (${os.cpus()[0].model}), load ${os.loadavg()[0].toFixed(1)}`,
  );
  for (let p = 0; p < PAIRS; p++) {
    // The order alternates, so a load that drifts during the run does not favour one side.
    let plain, scoped;
    if (p % 2) {
      scoped = run('scoped');
      plain = run('plain');
    } else {
      plain = run('plain');
      scoped = run('scoped');
    }
    ratios.push(scoped / plain);
    console.log(
      `[async-scope] pair ${p + 1}: ${AWAITS.toLocaleString('en')} awaits ${plain.toFixed(0)} ms without a scope, ${scoped.toFixed(0)} ms after one: ${(scoped / plain).toFixed(2)}×`,
    );
  }
  ratios.sort((a, b) => a - b);
  console.log(
    `[async-scope] median ${ratios[Math.floor(ratios.length / 2)].toFixed(2)}× (${ratios.map((r) => r.toFixed(2)).join(', ')})`,
  );
}
