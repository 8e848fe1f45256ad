#!/usr/bin/env node
// gpu-smoke: an operator's end-to-end check of a GPU box before it takes real work
// (apps/gpu-agent/README.md, docs/GPU_E2E.md).
//
//   node scripts/gpu-smoke.mjs [--full] [--model DIR] [--data DIR] [--out DIR] [--keep] [--budget-s N] [--only STEPS]
//   node scripts/gpu-smoke.mjs --training [--out DIR] [--budget-s N] [--only STEPS]   # the training product
//   node scripts/gpu-smoke.mjs --cpu-rehearsal [--training]   # the same loop on the CPU, no GPU needed
//   node scripts/gpu-smoke.mjs --help
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
//
// --training drives the training product instead (scripts/gpu-smoke/training.mjs): a smoke profile
// of deep-recurrence (deep-recurrence-smoke: Easy 60 s, Hard scaled to 60 s), the sample
// submission.py on Easy (accuracy far above chance, the loss curve live, GPU memory given back), the
// offload cheat (rule_violation), a submission that fills the GPU (memory_limit, the slot usable
// after), Hard ranked on the smoke board, and a cancel while training (memory freed).
//
// This file asks for the GPU with the standard library only, then loads the loop
// (scripts/gpu-smoke/main.mjs), which talks to the hub through the product's REST client and /live
// follower (apps/cli: run `npm run build` first, or use the pack of scripts/pack-gpu-smoke.sh,
// which bundles all of it into one file).
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { gpus } from './gpu-smoke/gpus.mjs';
import { optionsError, parseOptions, USAGE } from './gpu-smoke/options.mjs';

// The checkout (or the unpacked pack): this file's folder's parent. Read here, in the entry: once
// bundled, every module's import.meta.url is the bundle's.
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const started = Date.now();
const opts = parseOptions(process.argv.slice(2));
if (opts.help) {
  console.log(USAGE);
  process.exit(0);
}
const wrong = optionsError(opts);
if (wrong) {
  console.error(`gpu-smoke: ${wrong} (--help lists the options)`);
  process.exit(2);
}

const gpu = opts.rehearsal ? { list: [], why: '' } : gpus();
if (!opts.rehearsal && gpu.list.length === 0) {
  console.log(
    `SKIP gpu-smoke: no NVIDIA GPU on this machine (${gpu.why}); nothing was run. Run it on a GPU box, ` +
      (opts.training
        ? "or pass --cpu-rehearsal --training to drive the same training steps on recurrence-cpu's tasks."
        : 'or pass --cpu-rehearsal to drive the same loop on toy-decode.'),
  );
  process.exit(0);
}

// Imported only past the skip: a machine without a GPU needs no node_modules to be told so.
let loop;
try {
  loop = await import('./gpu-smoke/main.mjs');
} catch (err) {
  if (err?.code !== 'ERR_MODULE_NOT_FOUND') throw err;
  console.error(
    `gpu-smoke: cannot load the hub client (${err.message.split('\n')[0]}): run \`npm run build\` ` +
      '(it builds apps/cli and libs), or use the pack of scripts/pack-gpu-smoke.sh',
  );
  process.exit(1);
}
await loop.main({ root, opts, gpu, started });
