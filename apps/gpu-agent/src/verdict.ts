import { RUN_TIME_LIMIT } from '@dryft/libs';
import type { HarnessResultEvent } from '@dryft/libs';

/** Why a run was stopped before its harness ended by itself. */
export type StopReason = 'cancel' | 'deadline' | 'shutdown' | 'lost';

/** A failed result the agent reports in the harness's place. */
export const failed = (
  failureCode: HarnessResultEvent['failureCode'],
  message: string,
): HarnessResultEvent => ({
  type: 'result',
  status: 'failed',
  failureCode,
  message,
  score: null,
  workloads: [],
  metrics: {},
});

/**
 * The verdict the agent reports for a run (null: the server ended it and already has the final
 * state). Why it stopped decides first (a cancel, the whole-run deadline, the agent's shutdown):
 * the whole-run deadline is a cancel with its reason, `run_time_limit`, which the hub stores in
 * the words of its own deadline sweep, naming the limit in force; it is never a `timeout`, which
 * is the harness's per-sample budget;
 * otherwise the harness's own verdict, or the preparation's failure; a harness that ended without
 * one is the engine's fault only if the engine's code was running then, else the evaluator's.
 */
export function verdictFor(o: {
  stopReason: StopReason | null;
  stopMessage: string;
  preparationFailure: HarnessResultEvent | null;
  harnessResult: HarnessResultEvent | null;
  untrustedRunning: boolean;
  exitCode: number | null;
}): { verdict: HarnessResultEvent; canceled: boolean; cancelReason?: typeof RUN_TIME_LIMIT } | null {
  if (o.stopReason === 'lost') return null;
  let verdict: HarnessResultEvent;
  let canceled = false;
  switch (o.stopReason) {
    case 'cancel':
      canceled = true;
      verdict = failed(null, `Canceled: ${o.stopMessage}`);
      break;
    case 'deadline':
      return {
        canceled: true,
        cancelReason: RUN_TIME_LIMIT,
        verdict: failed(null, "Canceled: the run exceeded the organizer's whole-run time limit."),
      };
    case 'shutdown':
      verdict = failed(
        'infra_error',
        "The GPU agent was shut down during the run. This is not your engine's fault; retry once.",
      );
      break;
    default:
      verdict =
        o.preparationFailure ??
        o.harnessResult ??
        (o.untrustedRunning
          ? // The trusted side died while the submission's code ran (and only then): the engine
            // is held responsible, as for any other way it makes the evaluation impossible.
            failed(
              'candidate_error',
              `The evaluator was ended while your engine was running (exit ${o.exitCode ?? 'by signal'}), without a verdict: your engine is held responsible (it may have exhausted the machine's memory or attacked the evaluator).`,
            )
          : failed(
              'harness_error',
              `The evaluator ended without a verdict (exit ${o.exitCode ?? 'by signal'}); retry once and report it if it persists.`,
            ));
  }
  return { verdict, canceled };
}
