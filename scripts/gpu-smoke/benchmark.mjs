// The benchmark gpu-smoke runs (the smoke profile it writes, the full definition, or toy-decode for
// the CPU rehearsal) and the checkpoint it needs.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';

export const REAL_CHECKPOINT = '/models/Qwen3-4B-Instruct-2507';

/** Writes the benchmark's definition into BENCHDIR (the hub's BENCHMARKS_DIR); returns its id. */
export function writeBenchmark({ root, benchDir, rehearsal, full, gpu }) {
  mkdirSync(benchDir, { recursive: true });
  if (rehearsal) {
    // The rehearsal checks the plumbing, not a shared CPU's timing noise: no stability limit.
    writeFileSync(
      path.join(benchDir, 'toy-decode.yaml'),
      readFileSync(path.join(root, 'config/benchmarks/toy-decode.yaml'), 'utf8').replace(
        /maxRatioSpreadPct: [\d.]+/,
        'maxRatioSpreadPct: 100000',
      ),
    );
    return 'toy-decode';
  }
  if (full) {
    writeFileSync(
      path.join(benchDir, 'qwen3-4b-decode.yaml'),
      readFileSync(path.join(root, 'config/benchmarks/qwen3-4b-decode.yaml')),
    );
    return 'qwen3-4b-decode';
  }
  const benchId = 'qwen3-4b-decode-smoke';
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
referenceEngine: harness/reference/qwen3
calibration: { targetHalfWidthPct: 1, maxPairs: 200, budgetSeconds: 600 }
workloads:
  public:
    - { name: s-b1-p64, batchSize: 1, promptLength: 64, maxNewTokens: 32, seed: 1 }
    - { name: s-b8-p64, batchSize: 8, promptLength: 64, maxNewTokens: 32, seed: 2 }
  hidden:
    - { name: s-h-b1-p64, batchSize: 1, promptLength: 64, maxNewTokens: 32, seed: 70001 }
    - { name: s-h-b8-p128, batchSize: 8, promptLength: 128, maxNewTokens: 32, seed: 70002 }
# Official: at least 6 pairs (whole ABBA blocks), up to 12 until the score is within ±1.5 %: the
# fast example against the reference settles in 6 (harness/GPU_RESULTS.md); 0.2 % run-to-run spread.
samples: { public: 1, official: 6, warmup: 1, maxPairs: 12, targetHalfWidthPct: 1.5, runSpreadPct: 0.2 }
limits: { loadSeconds: 300, sampleSeconds: 60, runSeconds: 800, memoryBytes: 40000000000, memoryMeasure: auto }
checks: { maxTtftMs: null, maxTpotMs: 200, maxRatioSpreadPct: 60, logitTolerance: 0.4 }
dailyLimits: { official: 50 }
`,
  );
  return benchId;
}

/**
 * The checkpoint's folder: --model, the real one where present, else a Qwen3-4B-shaped one with
 * random BF16 weights built once (harness/tests/gpu/build_qwen3_4b.py). Exits 1 when it cannot be
 * built or the engine's own uid could not read it.
 */
export function prepareCheckpoint({ root, python, model, say }) {
  let modelDir = model
    ? path.resolve(model)
    : existsSync(path.join(REAL_CHECKPOINT, 'config.json'))
      ? REAL_CHECKPOINT
      : null;
  if (!modelDir) {
    modelDir = '/var/lib/dryft-gpu-smoke/qwen3-4b-random';
    if (!existsSync(path.join(modelDir, 'config.json'))) {
      say(
        `no ${REAL_CHECKPOINT}: building a Qwen3-4B-shaped checkpoint with random BF16 weights in ${modelDir}`,
      );
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
  return modelDir;
}

const workloadOf = (l) => ({
  name: /name: ([\w-]+)/.exec(l)[1],
  batch: Number(/batchSize: (\d+)/.exec(l)[1]),
  prompt: Number(/promptLength: (\d+)/.exec(l)[1]),
  tokens: Number(/maxNewTokens: (\d+)/.exec(l)[1]),
  seed: Number(/seed: (\d+)/.exec(l)[1]),
});

/** The public and the hidden workloads of the definition gpu-smoke wrote (one flow-style line each). */
export function definitionWorkloads(benchDir, benchId) {
  const text = readFileSync(path.join(benchDir, `${benchId}.yaml`), 'utf8');
  const publicWls = text
    .split('\n')
    .filter((l) => /batchSize/.test(l) && !/ h-|s-h-/.test(l))
    .map(workloadOf);
  const hidden = text.split('hidden:')[1] ?? '';
  const hiddenWls = hidden
    .split('\n')
    .filter((l) => /batchSize/.test(l))
    .map(workloadOf);
  return { publicWls, hiddenWls };
}
