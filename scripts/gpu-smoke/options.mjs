// gpu-smoke's command line. Standard library only: the entry reads it before anything is imported.
export const USAGE = `gpu-smoke: an operator's end-to-end check of a GPU box before it takes real work (docs/GPU_E2E.md)

  node scripts/gpu-smoke.mjs [--full] [--model DIR] [--data DIR] [--out DIR] [--keep] [--budget-s N] [--only STEPS]
  node scripts/gpu-smoke.mjs --cpu-rehearsal          # the same loop on toy-decode, no GPU needed

  --full           config/benchmarks/qwen3-4b-decode.yaml unchanged (an hour or more) instead of the smoke profile
  --model DIR      the Qwen3-4B checkpoint (default /models/Qwen3-4B-Instruct-2507, else a random-weight one it builds)
  --data DIR       the hub's data folder (default .data/gpu-smoke-PID; emptied first)
  --out DIR        where gpu-smoke.log, runs.log, the table and the hub's and agent's logs go
  --keep           keep the data folder afterwards
  --budget-s N     start no new run past N seconds (a machine lent for a fixed time)
  --only STEPS     just these steps, in this order (comma-separated): starter-public,starter-official,calibrate,fast,fast-again,perturbed,view,cancel
  --cpu-rehearsal  drive the loop on toy-decode with a CPU slot
  --help           this text

Exit 0: every check passed (or no GPU: a SKIP line); 1: a check failed.`;

export function parseOptions(argv) {
  const flag = (n) => argv.includes(n);
  const value = (n) => {
    const i = argv.indexOf(n);
    return i >= 0 ? argv[i + 1] : undefined;
  };
  return {
    help: flag('--help') || flag('-h'),
    rehearsal: flag('--cpu-rehearsal'),
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
