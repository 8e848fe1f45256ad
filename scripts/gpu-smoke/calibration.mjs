// The reference pairing on the box: K calibrated by the organizer's route, then the fast example
// official twice against the reference, their scores within REPEAT_PCT of each other (issue 29:
// one engine's official score must hold from run to run).
import { z } from 'zod';
import { BaselinesView, RunView, TERMINAL_STATUSES } from '@dryft/libs';
import { outOfTime } from './scenarios.mjs';

/** How far apart two official runs of one steady engine may score, in percent of their mean. */
export const REPEAT_PCT = 1.5;
/** GPU seconds the smoke's calibration may spend on pairs (the definition's budget is 600). */
const CALIBRATION_BUDGET_S = 90;

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const RemeasureResponse = z.object({ runs: z.array(RunView) }).passthrough();

/** Queues one calibration part on the agents' key, waits for it, and records K as the hub pooled it. */
export async function calibrate(ctx) {
  const { op, report, benchId } = ctx;
  outOfTime(ctx, 'the calibration and what follows were not run');
  const t0 = Date.now();
  const { runs } = await op.call(RemeasureResponse, `/api/admin/benchmarks/${benchId}/baselines/remeasure`, {
    method: 'POST',
    json: {
      mode: 'calibration',
      budgetSeconds: ctx.rehearsal ? 30 : CALIBRATION_BUDGET_S,
      reason: 'gpu-smoke: calibrate K',
    },
  });
  const runId = runs[0].id;
  let run;
  for (;;) {
    run = await op.call(RunView, `/api/runs/${runId}`);
    if (TERMINAL_STATUSES.includes(run.status)) break;
    await sleep(1000);
  }
  const secs = (Date.now() - t0) / 1000;
  const baselines = await op.call(BaselinesView, `/api/admin/benchmarks/${benchId}/baselines`);
  const k = baselines.calibrations.find((c) => c.rulesVersion === baselines.rulesVersion);
  const perWorkload = k
    ? Object.entries(k.workloads)
        .map(
          ([w, x]) => `${w} K ${x.k.toFixed(3)} (${x.low.toFixed(3)}–${x.high.toFixed(3)}, ${x.pairs} pairs)`,
        )
        .join('; ')
    : '';
  report.row({
    label: 'calibration of K',
    mode: 'calibration',
    expected: 'succeeded',
    got: `${run.status}${run.failureCode ? ` ${run.failureCode}` : ''}`,
    score: null,
    secs,
    live: '-',
    detail: k ? `±${k.halfWidthPct.toFixed(2)} % on ${k.hardware}; ${perWorkload}` : (run.message ?? ''),
  });
  report.record(
    'K calibrated (baseline against the reference)',
    run.status === 'succeeded' && !!k,
    k
      ? `${k.hardware}: ±${k.halfWidthPct.toFixed(2)} % from ${k.pairs} pairs in ${secs.toFixed(0)} s; ${perWorkload}`
      : `${run.status} ${run.failureCode ?? ''}: ${run.message ?? 'no K pooled'}`,
  );
  return !!k;
}

/**
 * The fast example's official runs against the reference: each scored against it, the two close.
 * The CPU rehearsal checks the plumbing only: a shared CPU's timing noise decides nothing (INFO).
 */
export function repeatability(report, results, rehearsal) {
  const scored = results.filter((r) => r.run.status === 'succeeded' && r.run.score != null);
  for (const r of scored)
    report.record(
      `fast example scored against the reference (${r.runId})`,
      r.result.scoring?.against === 'reference' && r.result.scoring?.calibrated === true,
      r.result.scoring?.note ?? 'the result says nothing of what it was scored against',
    );
  if (scored.length < 2)
    return report.record('fast example official twice', false, `${scored.length} of 2 runs scored`);
  const [a, b] = scored.map((r) => r.run.score);
  const apartPct = (100 * Math.abs(a - b)) / ((a + b) / 2);
  const intervals = scored
    .map((r) =>
      r.result.interval ? `${r.result.interval.low.toFixed(2)}–${r.result.interval.high.toFixed(2)}` : '-',
    )
    .join(' and ');
  report.record(
    `fast example official twice within ${REPEAT_PCT} %`,
    rehearsal ? 'info' : apartPct <= REPEAT_PCT,
    `${a.toFixed(2)} and ${b.toFixed(2)}: ${apartPct.toFixed(2)} % apart; ranking intervals ${intervals}`,
  );
}
