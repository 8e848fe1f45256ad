import { isWholeRunLimitCancel } from '@dryft/libs';
import type { RunView } from '@dryft/libs';

type RunTimes = Pick<RunView, 'status' | 'failureCode' | 'deadlineAt' | 'finishedAt' | 'cancelReason'>;

/**
 * Whether the organizer's whole-run time limit stopped this run (not the engine's per-sample
 * budget): canceled with the whole-run limit's reason (whichever of the agent and the hub's
 * deadline sweep stopped it), or, a run stored before the hub canceled these, a `timeout` at or
 * after the run's deadline.
 */
export function stoppedAtWholeRunLimit(run: RunTimes): boolean {
  if (run.status === 'canceled') return isWholeRunLimitCancel(run.cancelReason);
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
