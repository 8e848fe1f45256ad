// gpu-smoke's command line. Standard library only: the entry reads it before anything is imported.

/** The steps --only names, in their default order (scenarios.mjs `steps`, training.mjs `trainingSteps`). */
export const DECODE_STEPS = [
  'starter-public',
  'starter-official',
  'calibrate',
  'fast',
  'fast-again',
  'perturbed',
  'view',
  'cancel',
];
export const TRAINING_STEPS = ['train-easy', 'train-offload', 'train-oom', 'train-hard', 'train-cancel'];

export const USAGE = `gpu-smoke: an operator's end-to-end check of a GPU box before it takes real work (docs/GPU_E2E.md)

  node scripts/gpu-smoke.mjs [--full] [--model DIR] [--data DIR] [--out DIR] [--keep] [--budget-s N] [--only STEPS]
  node scripts/gpu-smoke.mjs --training [--out DIR] [--budget-s N] [--only STEPS]   # the training product
  node scripts/gpu-smoke.mjs --cpu-rehearsal [--training]   # the same loop on the CPU, no GPU needed

  --full           config/benchmarks/qwen3-4b-decode.yaml unchanged (an hour or more) instead of the smoke profile
  --model DIR      the Qwen3-4B checkpoint (default /models/Qwen3-4B-Instruct-2507, else a random-weight one it builds)
  --data DIR       the hub's data folder (default .data/gpu-smoke-PID; emptied first)
  --out DIR        where gpu-smoke.log, runs.log, the table and the hub's and agent's logs go
  --keep           keep the data folder afterwards
  --budget-s N     start no new run past N seconds (a machine lent for a fixed time)
  --only STEPS     just these steps, in this order (comma-separated): ${DECODE_STEPS.join(',')}
                   (with --training: ${TRAINING_STEPS.join(',')})
  --training       the training product instead of decode: deep-recurrence's smoke profile (Easy 60 s, Hard
                   scaled to 60 s): the sample on Easy, the offload cheat, an out-of-memory submission,
                   Hard ranked on the smoke board, a cancel while training (about 5 minutes in all)
  --cpu-rehearsal  drive the loop with a CPU slot: toy-decode, or with --training deep-recurrence's steps on
                   recurrence-cpu's tasks (seconds of training; GPU memory not checked)
  --help           this text

Exit 0: every check passed (or no GPU: a SKIP line); 1: a check failed.`;

/** What is wrong with OPTS (a sentence), or null: checked before anything starts. */
export function optionsError(opts) {
  if (opts.training && opts.full)
    return '--full is for decode; the training pass runs its smoke profile (docs/GPU_E2E.md)';
  const known = opts.training ? TRAINING_STEPS : DECODE_STEPS;
  const unknown = (opts.only ?? []).filter((s) => !known.includes(s));
  if (unknown.length)
    return `--only: unknown step${unknown.length > 1 ? 's' : ''} ${unknown.join(', ')}; the ${opts.training ? 'training' : 'decode'} steps are ${known.join(', ')}`;
  return null;
}

export function parseOptions(argv) {
  const flag = (n) => argv.includes(n);
  const value = (n) => {
    const i = argv.indexOf(n);
    return i >= 0 ? argv[i + 1] : undefined;
  };
  return {
    help: flag('--help') || flag('-h'),
    rehearsal: flag('--cpu-rehearsal'),
    // --training: the training product (deep-recurrence) instead of decode.
    training: flag('--training'),
    full: flag('--full'),
    keep: flag('--keep'),
    // --only cancel,view,…: just those steps, in that order (a second call on a lent machine that
    // finishes what the first did not reach).
    only: value('--only')?.split(','),
    out: value('--out'),
    data: value('--data'),
    model: value('--model'),
    // --budget-s N: start no new run past N seconds; what is left is reported as not run.
    budgetS: Number(value('--budget-s') ?? 0),
  };
}
