import type { FailureCode } from '@dryft/libs';

export interface FailureHelp {
  title: string;
  look: string[];
  retry: boolean;
}

const CONTACT =
  'If it happens again, contact the event organizer with the submission link, the full Run ID, the error message and the time.';

/** The decode page's troubleshooting list, per failure code. */
export const FAILURE_HELP: Record<FailureCode, FailureHelp> = {
  incorrect_output: {
    title: 'Incorrect output',
    look: [
      'Every token must match the baseline’s greedy choice; quantized or approximate output is not allowed.',
      'The detail below names the first position that differs: check prefill, the KV cache and any speculative step at that point.',
      'generate() must yield one id per sequence exactly max_new_tokens times and must not stop at end-of-sequence.',
    ],
    retry: false,
  },
  candidate_error: {
    title: 'The engine raised an error',
    look: [
      'Read the traceback in the detail and the log.',
      'engine.py must be at the archive root and export class Engine with __init__(model_path) and generate(input_ids, max_new_tokens).',
      'The sandbox has no network: do not download weights or packages.',
    ],
    retry: false,
  },
  timeout: {
    title: 'Time limit exceeded',
    look: [
      'A sample ran past its per-sample budget (a run over the organizer’s whole-run time limit is canceled instead, and says so).',
      'Check loading time in __init__ (untimed but budgeted) and any warm-up or compilation you do per call.',
    ],
    retry: false,
  },
  latency_limit: {
    title: 'Latency limit',
    look: [
      'Official runs enforce maximum TTFT and TPOT: compare the sample table with the benchmark’s published limits.',
    ],
    retry: false,
  },
  memory_limit: {
    title: 'Memory limit',
    look: [
      'The engine used more GPU memory than the benchmark allows: check KV-cache sizing and temporary buffers.',
    ],
    retry: false,
  },
  unstable_timing: {
    title: 'Unstable timing',
    look: [
      'The spread between the fastest and slowest samples was above the limit.',
      'Avoid work that varies from call to call (lazy compilation, allocator growth, background threads).',
    ],
    retry: false,
  },
  rule_violation: {
    title: 'Rule violation',
    look: ['The submission broke one of the benchmark’s rules; the detail says which.'],
    retry: false,
  },
  infra_error: {
    title: 'Infrastructure error',
    look: ['Something went wrong on the hub or the GPU agent, not in your code. Retry once.', CONTACT],
    retry: true,
  },
  harness_error: {
    title: 'Harness error',
    look: ['The trusted evaluator failed, not your code. Retry once.', CONTACT],
    retry: true,
  },
};
