/**
 * The organizer's whole-run time limit, as every end it causes reads. A run over it is canceled
 * with an explanation whichever side stops it first: the agent's own deadline timer (which reports
 * `canceled` with the reason {@link RUN_TIME_LIMIT}) or the hub's deadline sweep when no agent
 * reports. Both store these same words, so the run page, the CLI, the organizer console, the live
 * status and the webhooks read the same for either. It is not the per-sample budget (a sample over
 * its budget still fails as `timeout`), nor a training submission's own time allowance.
 */

/** The reason an agent gives in `run.finished` for a run it stopped at the whole-run deadline. */
export const RUN_TIME_LIMIT = 'run_time_limit';

/** The run's message: the limit in force when it ended (the organizer may have changed it meanwhile). */
export function wholeRunLimitMessage(limitSeconds: number): string {
  return `Canceled: the run exceeded the organizer's whole-run time limit of ${limitSeconds} s.`;
}

/** The run's cancel reason. */
export function wholeRunLimitCancelReason(limitSeconds: number): string {
  return `whole-run time limit (${limitSeconds} s) exceeded`;
}

/** Whether a canceled run's reason is the whole-run limit's (the status badge names it). */
export function isWholeRunLimitCancel(cancelReason: string | null | undefined): boolean {
  return /^whole-run time limit \(\d+ s\) exceeded$/.test(cancelReason ?? '');
}
