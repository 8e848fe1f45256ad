// gpu-smoke's training product (--training): the smoke profile of deep-recurrence it writes, the
// submission.py files it uploads, and the runs it drives through the hub and the jailed agent: the
// sample on Easy, the offload cheat, a submission that runs out of memory, a cancel while training,
// and Hard with its time scaled down, ranked on the smoke profile's board.
import { readFileSync, writeFileSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { parse, stringify } from 'yaml';
import { watch } from './follow.mjs';
import { gpus, usedMiB, waitMemoryBack } from './gpus.mjs';
import { outOfTime } from './scenarios.mjs';

export const TRAINING_SMOKE_ID = 'deep-recurrence-smoke';

/**
 * The allowances of the smoke profile. GPU: Easy as defined (60 s), Hard's 3600 s scaled by
 * timeScale 1/60 to 60 s, so the whole training pass fits one ten-minute command. CPU rehearsal:
 * a few seconds each (it checks the plumbing, not what a CPU learns).
 */
export function trainingTimes(rehearsal) {
  const easySeconds = rehearsal ? 5 : 60;
  const hardTimeScale = rehearsal ? 5 / 3600 : 1 / 60;
  return { easySeconds, hardTimeScale };
}

/** How far above chance a succeeded run's accuracy must be: the H200 sample reached 99.94 % (chance 0.10 %). */
const aboveChance = (rehearsal) => (rehearsal ? 1.5 : 10);

/**
 * Writes the training smoke profile into BENCHDIR: config/benchmarks/deep-recurrence.yaml with the
 * box's GPU models, tiers Easy (dataset square) and Hard (its hidden task, ranked) with the times of
 * trainingTimes, medium left out. The CPU rehearsal takes its tasks, ceiling and sample from
 * recurrence-cpu (small tasks a CPU learns in seconds). Returns the id and what it wrote.
 */
export function writeTrainingBenchmark({ root, benchDir, rehearsal, gpu }) {
  mkdirSync(benchDir, { recursive: true });
  const read = (id) => parse(readFileSync(path.join(root, 'config/benchmarks', `${id}.yaml`), 'utf8'));
  const def = read('deep-recurrence');
  const cpu = rehearsal ? read('recurrence-cpu') : null;
  const { easySeconds, hardTimeScale } = trainingTimes(rehearsal);
  const easy = def.tiers.find((t) => t.id === 'easy');
  const hard = def.tiers.find((t) => t.id === 'hard');
  const square = (cpu ?? def).datasets.find((d) => d.id === 'square');
  const hiddenTask = cpu
    ? { ...square.task, trainSeed: hard.hiddenTask.trainSeed, evalSeed: hard.hiddenTask.evalSeed }
    : hard.hiddenTask;
  const hardSeconds = hard.trainingSeconds * hardTimeScale;
  const smoke = {
    ...def,
    id: TRAINING_SMOKE_ID,
    title: 'Deep recurrence (SMOKE PROFILE)',
    summary: "gpu-smoke's operator check of the training product on a GPU box; not a competition benchmark.",
    runTimeLimitSeconds: 600,
    hardware: rehearsal
      ? { accelerator: 'cpu', gpuModels: [] }
      : { accelerator: 'gpu', gpuModels: [...new Set(gpu.list.map((g) => g.name))] },
    ...(rehearsal ? { starter: cpu.starter, maxModelStateElements: cpu.maxModelStateElements } : {}),
    tiers: [
      { ...easy, trainingSeconds: easySeconds, evalSeconds: rehearsal ? 30 : easy.evalSeconds },
      {
        ...hard,
        trainingSeconds: hardSeconds,
        // The final evaluation's budget is a ceiling (it costs what it uses): scaled, but never
        // below 30 s, so a slow first evaluation in a fresh jail does not decide the smoke.
        evalSeconds: Math.max(30, hard.evalSeconds * hardTimeScale),
        dailyLimit: 5,
        hiddenTask,
      },
    ],
    datasets: [{ ...square, tiers: ['easy'] }],
  };
  // The CPU practice benchmark pins nothing (it runs on the agent's own Python).
  if (rehearsal) delete smoke.runtimePins;
  writeFileSync(
    path.join(benchDir, `${TRAINING_SMOKE_ID}.yaml`),
    `# SMOKE PROFILE written by scripts/gpu-smoke.mjs --training: ${rehearsal ? 'deep-recurrence with recurrence-cpu tasks, for the CPU rehearsal' : 'config/benchmarks/deep-recurrence.yaml'}
# with Easy ${easySeconds} s and Hard ${hard.trainingSeconds} s × timeScale ${hardTimeScale.toPrecision(4)} = ${hardSeconds.toFixed(0)} s of training.
# NOT the official definition.
${stringify(smoke)}`,
  );
  const tiers = Object.fromEntries(smoke.tiers.map((t) => [t.id, t]));
  return { benchId: TRAINING_SMOKE_ID, tiers, hardTimeScale };
}

/** The submission.py files: the sample, the offload cheat and the out-of-memory one (base.py + case, as the corpus tests write them). */
export function trainingSubmissions({ root, rehearsal }) {
  const corpus = path.join(root, 'harness/tests/training_corpus');
  const withBase = (name) =>
    Buffer.from(
      `${readFileSync(path.join(corpus, 'base.py'), 'utf8')}\n\n${readFileSync(path.join(corpus, name), 'utf8')}`,
    );
  return {
    sample: readFileSync(
      path.join(root, 'starters', rehearsal ? 'recurrence-cpu' : 'deep-recurrence', 'submission.py'),
    ),
    offload: withBase('cheat_offload.py'),
    oom: withBase('oom_fill_device.py'),
  };
}

const gb = (bytes) => (bytes == null ? '-' : `${(bytes / 1e9).toFixed(2)} GB`);
const pct = (x) => (x == null ? '-' : `${x.toFixed(2)} %`);

/** What a training run's result says, in one line: the figures its table row carries. */
function figures(result, { stored }) {
  const m = result.metrics ?? {};
  return [
    m.accuracy != null ? `accuracy ${pct(m.accuracy)} (chance ${pct(m.chanceAccuracy)})` : null,
    m.trainingSeconds != null
      ? `trained ${m.trainingSeconds.toFixed(1)} s of ${m.trainingAllowanceSeconds} s`
      : null,
    m.updates != null ? `${m.updates} updates / ${m.steps ?? '-'} steps` : null,
    m.peakMemoryBytes != null ? `peak ${gb(m.peakMemoryBytes)}` : null,
    `${stored} loss points stored`,
  ]
    .filter(Boolean)
    .join(', ');
}

/** The live part of a run's row: what reached the /live watcher before it heard the run had ended. */
function liveLine(seen) {
  const lead = seen.firstLossAt ? (seen.endSeenAt - seen.firstLossAt) / 1000 : null;
  return `${seen.logs} lines, ${seen.losses} loss points${lead == null ? '' : ` (first ${lead.toFixed(1)} s before the end)`}`;
}

/**
 * GPU memory after a run against BEFORE: { freed, line } (freed null on the CPU, where it is not
 * checked, which the line says).
 */
async function memoryAfter(ctx, before) {
  if (ctx.rehearsal) return { freed: null, line: 'memory: not checked (CPU)' };
  const after = await waitMemoryBack(before);
  return {
    freed: after.freed,
    line: `GPU memory ${usedMiB(before)} before, ${usedMiB(after.now)} after; compute apps after: ${after.apps || 'none'}`,
  };
}

/**
 * One training run: SUBMISSIONID on TIER (DATASET for practice tiers) in MODE, followed over /live to
 * its end; its verdict checked against EXPECT (and FAILURECODE), a succeeded run's accuracy against
 * chance, the loss curve against what the watcher saw live, and (GPU) the memory given back.
 */
export async function trainingScenario(
  ctx,
  { label, submissionId, tier, dataset, mode = 'public', expect, failureCode },
) {
  const { participant, report, rehearsal } = ctx;
  outOfTime(ctx, `${label} and what follows were not run`);
  const before = rehearsal ? null : gpus().list;
  const t0 = Date.now();
  const runId = await participant.startRun(submissionId, mode, dataset ? { tier, dataset } : { tier });
  const w = watch(participant, runId);
  // A run the agent never finishes would hold the smoke until the hub's own limit: cancel it once it
  // is well past its allowance, so its row says so.
  const tierDef = ctx.training.tiers[tier];
  const overdue = setTimeout(
    () => void participant.cancel(runId, 'gpu-smoke: the run went on far past its allowance').catch(() => {}),
    (tierDef.trainingSeconds + tierDef.evalSeconds + 180) * 1000,
  );
  const { run, logs } = await w.done.finally(() => clearTimeout(overdue));
  const secs = (Date.now() - t0) / 1000;
  const result = await participant.result(runId);
  report.runLog(
    `==== ${label} (${tier}${dataset ? `/${dataset}` : ''}, ${mode}) ${runId}: ${run.status} ${run.failureCode ?? ''}\n${logs.join('\n')}\n`,
  );
  const got = `${run.status}${run.failureCode ? ` ${run.failureCode}` : ''}`;
  const ok = run.status === expect && (!failureCode || run.failureCode === failureCode);
  const stored = (result.curve ?? []).filter((p) => p.name === 'loss').length;
  const mem = await memoryAfter(ctx, before);
  report.row({
    label,
    mode: `${tier}${dataset ? `/${dataset}` : ''} ${mode}`,
    expected: failureCode ? `${expect} ${failureCode}` : expect,
    got,
    score: run.score,
    secs,
    live: liveLine(w.seen),
    detail: [
      figures(result, { stored }),
      run.status === 'succeeded' ? '' : (run.message ?? '').slice(0, 200),
      run.runtimeMismatch?.length ? `runtime differs from the pins: ${run.runtimeMismatch.join('; ')}` : '',
      mem.line,
    ]
      .filter(Boolean)
      .join('; '),
  });
  if (!ok) report.say(`${label}: the run's log ends:\n${logs.slice(-40).join('\n')}`);
  report.record(
    label,
    ok,
    `${got} in ${secs.toFixed(1)} s${run.message ? `; message: ${run.message.slice(0, 400)}` : ''}`,
  );
  if (mem.freed !== null) report.record(`${label}: GPU memory back after`, mem.freed, mem.line);
  if (expect === 'succeeded' && run.status === 'succeeded') {
    const m = result.metrics ?? {};
    const factor = aboveChance(rehearsal);
    report.record(
      `${label}: accuracy far above chance`,
      m.accuracy != null && m.chanceAccuracy != null && m.accuracy >= factor * m.chanceAccuracy,
      `accuracy ${pct(m.accuracy)}, chance ${pct(m.chanceAccuracy)} (needs ≥ ${factor} × chance)`,
    );
    report.record(
      `${label}: loss curve live`,
      w.seen.losses > 0 && stored > 0,
      `${w.seen.losses} loss points reached a /live watcher before the run finished (${stored} stored); ${liveLine(w.seen)}`,
    );
    if (run.runtimeMismatch?.length)
      report.record(`${label}: runtime pins`, 'info', `the run is marked: ${run.runtimeMismatch.join('; ')}`);
  }
  // The first run after an out-of-memory one that should succeed tells whether the slot recovered.
  if (ctx.training.afterOom && expect === 'succeeded') {
    report.record(
      'slot usable after the out-of-memory run',
      run.status === 'succeeded',
      `the next run (${label}) ${got}`,
    );
    ctx.training.afterOom = false;
  }
  return { runId, run, result, logs };
}

/** An Easy run of the sample canceled at its first loss point: canceled, and (GPU) its memory freed. */
export async function trainingCancel(ctx, sampleId) {
  const { participant, report, rehearsal } = ctx;
  outOfTime(ctx, 'the training cancel check was not run');
  const before = rehearsal ? null : gpus().list;
  const runId = await participant.startRun(sampleId, 'public', { tier: 'easy', dataset: 'square' });
  let lossSeen;
  const firstLoss = new Promise((r) => (lossSeen = r));
  const w = watch(participant, runId, { onMetric: (m) => m.name === 'loss' && lossSeen() });
  const deadline = new Promise((r) => setTimeout(r, 240_000).unref());
  await Promise.race([firstLoss, deadline, w.done]);
  const during = rehearsal ? null : gpus().list;
  const t0 = Date.now();
  const status = await participant.cancel(runId, 'gpu-smoke: cancel during training');
  const { run, logs } = await w.done;
  const stopSecs = (Date.now() - t0) / 1000;
  report.runLog(`==== cancel during training ${runId}: ${run.status}\n${logs.join('\n')}\n`);
  const freed = rehearsal ? null : await waitMemoryBack(before);
  // The hub answers the cancel at once; the process's end shows as the GPU memory coming back.
  const freedSecs = (Date.now() - t0) / 1000;
  const memLine = rehearsal
    ? 'memory: not checked (CPU)'
    : `GPU memory ${usedMiB(before)} before, ${usedMiB(during)} while training, ${usedMiB(freed.now)} after (seen ${freedSecs.toFixed(1)} s after the request); compute apps after: ${freed.apps || 'none'}`;
  report.row({
    label: 'cancel during training',
    mode: 'easy/square public',
    expected: 'canceled',
    got: run.status,
    score: null,
    secs: stopSecs,
    live: liveLine(w.seen),
    detail: memLine,
  });
  report.record(
    'cancel of a training run',
    status < 300 && run.status === 'canceled' && w.seen.losses > 0 && (rehearsal || freed.freed),
    `canceled after ${w.seen.losses} loss point(s) reached the watcher; the hub reported it canceled ${stopSecs.toFixed(1)} s after the request; ${memLine}`,
  );
}

/** The smoke board lists the Hard run. */
async function boardLists(ctx, runId) {
  const board = await ctx.participant.leaderboard(ctx.benchId);
  const entry = board.entries.find((e) => e.runId === runId);
  ctx.report.record(
    'Hard ranked on the smoke board',
    Boolean(entry),
    entry
      ? `GET /api/leaderboards/${ctx.benchId}: rank ${entry.rank}, ${entry.name}, score ${entry.score.toFixed(2)}`
      : `the run is not on the board (${board.entries.length} entries)`,
  );
}

/** The training steps, by the names --only takes, in their default order. */
export function trainingSteps(ctx, ids) {
  const run = (o) => trainingScenario(ctx, o);
  return {
    'train-easy': () =>
      run({
        label: 'sample, Easy',
        submissionId: ids.sample,
        tier: 'easy',
        dataset: 'square',
        expect: 'succeeded',
      }),
    'train-offload': () =>
      run({
        label: 'offload cheat, Easy',
        submissionId: ids.offload,
        tier: 'easy',
        dataset: 'square',
        expect: 'failed',
        failureCode: 'rule_violation',
      }),
    'train-oom': async () => {
      // The harness reports an out-of-memory error of the submission as memory_limit (child.py's _is_oom).
      await run({
        label: 'out of memory, Easy',
        submissionId: ids.oom,
        tier: 'easy',
        dataset: 'square',
        expect: 'failed',
        failureCode: 'memory_limit',
      });
      ctx.training.afterOom = true;
    },
    'train-hard': async () => {
      const hard = await run({
        label: `sample, Hard (time × ${ctx.training.hardTimeScale.toPrecision(3)})`,
        submissionId: ids.sample,
        tier: 'hard',
        mode: 'official',
        expect: 'succeeded',
      });
      if (hard.run.status === 'succeeded') await boardLists(ctx, hard.runId);
    },
    'train-cancel': () => trainingCancel(ctx, ids.sample),
  };
}
