import type { RunView } from '@dryft/libs';

type RunTimes = Pick<RunView, 'status' | 'failureCode' | 'deadlineAt' | 'finishedAt' | 'cancelReason'>;

/**
 * Whether the organizer's whole-run time limit stopped this run (not the engine's per-sample
 * budget): a `timeout` at or after the run's deadline (the rule the hub uses to name the limit in
 * the message), or a cancel by the hub's deadline sweep.
 */
export function stoppedAtWholeRunLimit(run: RunTimes): boolean {
  if (run.status === 'canceled') return /whole-run time limit/.test(run.cancelReason ?? '');
  if (run.status !== 'failed' || run.failureCode !== 'timeout' || !run.deadlineAt || !run.finishedAt)
    return false;
  return Date.parse(run.finishedAt) >= Date.parse(run.deadlineAt) - 1000;
}

/** The status badge's words: "stopped · whole-run limit" for a run the whole-run limit ended. */
export function runStatusLabel(run: RunTimes): string {
  if (stoppedAtWholeRunLimit(run))
    return run.status === 'canceled' ? 'canceled · whole-run limit' : 'stopped · whole-run limit';
  return `${run.status}${run.failureCode ? ` · ${run.failureCode}` : ''}`;
}
