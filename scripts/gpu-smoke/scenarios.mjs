// The runs gpu-smoke drives and what each must show: its verdict, the live stream, and for the
// cancel, the GPU memory given back.
import { gpus, usedMiB, waitMemoryBack } from './gpus.mjs';
import { watch } from './follow.mjs';
import { calibrate, repeatability } from './calibration.mjs';

export class OutOfTime extends Error {}

/**
 * @param {object} ctx { participant, report, rehearsal, budgetS, started, slots }
 */
export function outOfTime(ctx, what) {
  if (ctx.budgetS && (Date.now() - ctx.started) / 1000 > ctx.budgetS)
    throw new OutOfTime(`${what}: past --budget-s ${ctx.budgetS}`);
}

/** One run of SUBMISSIONID in MODE, followed to its end, its verdict checked against EXPECT. */
export async function scenario(ctx, { label, submissionId, mode, expect, failureCode }) {
  const { participant, report } = ctx;
  outOfTime(ctx, `${label} (${mode}) and what follows were not run`);
  const t0 = Date.now();
  const runId = await participant.startRun(submissionId, mode);
  const w = watch(participant, runId);
  const { run, logs } = await w.done;
  const result = await participant.result(runId);
  const secs = (Date.now() - t0) / 1000;
  report.runLog(
    `==== ${label} (${mode}) ${runId}: ${run.status} ${run.failureCode ?? ''}\n${logs.join('\n')}\n`,
  );
  const ok = run.status === expect && (!failureCode || run.failureCode === failureCode);
  const memCheck = (result.checks ?? []).find((c) => c.name === 'memory');
  const wl = (result.workloads ?? [])
    .map(
      (x) =>
        `${x.workload}: TPOT ${x.tpotMs?.toFixed(3) ?? '-'} ms${x.speedup ? ` ×${x.speedup.toFixed(2)}` : ''}`,
    )
    .join('; ');
  report.row({
    label,
    mode,
    expected: failureCode ? `${expect} ${failureCode}` : expect,
    got: `${run.status}${run.failureCode ? ` ${run.failureCode}` : ''}`,
    score: run.score,
    secs,
    live: `${w.seen.logs} lines, ${w.seen.samples} samples`,
    detail: [wl || (run.message ?? '').slice(0, 160), memCheck ? `memory: ${memCheck.detail}` : '']
      .filter(Boolean)
      .join('; '),
  });
  if (!ok) report.say(`${label} (${mode}): the run's log ends:\n${logs.slice(-40).join('\n')}`);
  report.record(
    `${label} (${mode})`,
    ok,
    `${run.status}${run.failureCode ? ` ${run.failureCode}` : ''}${run.score != null ? `, score ${run.score.toFixed(2)}` : ''} in ${secs.toFixed(1)} s; ${wl}${!ok && run.message ? `; message: ${run.message}` : ''}`,
  );
  if (w.seen.samples > 0 || w.seen.logs > 0) {
    const lead = w.seen.firstSampleAt ? (w.seen.finishedAt - w.seen.firstSampleAt) / 1000 : null;
    report.record(
      `${label}: live stream`,
      w.seen.logs > 0 && (expect !== 'succeeded' || (w.seen.samples > 0 && lead > 0)),
      `${w.seen.logs} log lines and ${w.seen.samples} sample events reached a /live watcher; the first sample ${lead == null ? 'never came' : `${lead.toFixed(1)} s before the run finished`}`,
    );
  } else report.record(`${label}: live stream`, false, 'nothing reached the /live watcher');
  return { runId, run, result, logs };
}

/** A public run of the starter canceled at its first sample: canceled, and (GPU) its memory freed. */
export async function cancelCheck(ctx, starter) {
  const { participant, report, rehearsal } = ctx;
  outOfTime(ctx, 'the cancel check was not run');
  const before = rehearsal ? null : gpus().list;
  const cancelRun = await participant.startRun(starter, 'public');
  let sampleSeen;
  const sampled = new Promise((r) => (sampleSeen = r));
  const w = watch(participant, cancelRun, { onSample: () => sampleSeen() });
  const deadline = new Promise((r) => setTimeout(r, 240_000).unref());
  await Promise.race([sampled, deadline, w.done]);
  const during = rehearsal ? null : gpus().list;
  const t0 = Date.now();
  const status = await participant.cancel(cancelRun, 'gpu-smoke: cancel check');
  const { run } = await w.done;
  const stopSecs = (Date.now() - t0) / 1000;
  const freed = rehearsal ? null : await waitMemoryBack(before);
  // The hub answers the cancel at once; the process's end shows as the GPU memory coming back.
  const freedSecs = (Date.now() - t0) / 1000;
  const memLine = rehearsal
    ? ''
    : `; GPU memory used: ${usedMiB(before)} before, ${usedMiB(during)} while running, ${usedMiB(freed.now)} after (seen ${freedSecs.toFixed(1)} s after the request); compute apps after: ${freed.apps || 'none'}`;
  const memOk = rehearsal || freed.freed;
  report.row({
    label: 'cancel while sampling',
    mode: 'public',
    expected: 'canceled',
    got: run.status,
    score: null,
    secs: stopSecs,
    live: `${w.seen.logs} lines, ${w.seen.samples} samples`,
    detail: memLine.slice(2),
  });
  report.record(
    'cancel of a running run',
    status < 300 && run.status === 'canceled' && memOk,
    `canceled after ${w.seen.samples} sample event(s); the hub reported it canceled ${stopSecs.toFixed(1)} s after the request${memLine}`,
  );
}

/** The steps, by the names --only takes, in their default order. */
export function steps(ctx, ids) {
  const { report, rehearsal, slots } = ctx;
  const run = (label, submissionId, mode, expect, failureCode) =>
    scenario(ctx, { label, submissionId, mode, expect, failureCode });
  return {
    'starter-public': () => run('starter', ids.starter, 'public', 'succeeded'),
    'starter-official': () => run('starter', ids.starter, 'official', 'succeeded'),
    // K for this box (the baseline against the trusted reference engine), so that the fast
    // example's official runs below pair with the steady reference instead of the eager baseline.
    calibrate: async () => {
      ctx.calibrated = await calibrate(ctx);
    },
    fast: async () => {
      ctx.fastResult = await run('fast example', ids.fast, 'official', 'succeeded');
      ctx.fastRuns.push(ctx.fastResult);
      if (ctx.fastResult.run.status === 'succeeded')
        report.record(
          'fast example beats the baseline',
          (ctx.fastResult.run.score ?? 0) > 100,
          `score ${ctx.fastResult.run.score}`,
        );
    },
    // The same engine official again: against a calibrated reference the two must agree.
    'fast-again': async () => {
      ctx.fastRuns.push(await run('fast example, again', ids.fast, 'official', 'succeeded'));
      if (ctx.calibrated) repeatability(report, ctx.fastRuns, rehearsal);
    },
    perturbed: async () => {
      const p = await run('perturbed logits', ids.perturbed, 'public', 'failed', 'incorrect_output');
      if (p.run.message) report.say(`perturbed: ${p.run.message.slice(0, 300)}`);
    },
    // What the engine sees from inside the agent's sandbox and its jail.
    view: async () => {
      const v = await run('sandbox view', ids['sandbox-view'], 'public', 'succeeded');
      const viewLine = v.logs.find((l) => l.includes('sandbox-view: '));
      if (!viewLine) return report.record('sandbox view', false, 'the engine printed no sandbox-view line');
      const view = JSON.parse(viewLine.slice(viewLine.indexOf('sandbox-view: ') + 14));
      const slotNodes = rehearsal ? [] : [`nvidia${slots[0].gpus[0]}`];
      const gpuNodes = view.dev.filter((n) => /^nvidia\d+$/.test(n));
      const ok =
        view.uid !== 0 &&
        JSON.stringify(gpuNodes) === JSON.stringify(slotNodes) &&
        (rehearsal || (view.cuda === true && view.devices.length === 1));
      report.record('sandbox view', ok, `engine child: ${JSON.stringify(view)}`);
    },
    // Cancel while the GPU works.
    cancel: () => cancelCheck(ctx, ids.starter),
  };
}
