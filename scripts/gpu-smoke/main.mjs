// gpu-smoke's loop (the entry, scripts/gpu-smoke.mjs, has found a GPU or was asked to rehearse):
// hub and agent up, the agent's report, the submissions and their runs, the harness's cost, the table.
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { prepareCheckpoint, writeBenchmark } from './benchmark.mjs';
import { submissions } from './engines.mjs';
import { inProcessCost, measuredCost } from './harness-cost.mjs';
import { OrganizerSession, Participant } from './hub.mjs';
import { freePort, Processes } from './processes.mjs';
import { Report } from './report.mjs';
import { DECODE_STEPS, TRAINING_STEPS } from './options.mjs';
import { OutOfTime, steps } from './scenarios.mjs';
import { trainingSteps, trainingSubmissions, writeTrainingBenchmark } from './training.mjs';

const OPERATOR = 'gpu-smoke-operator';
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** @param {{ root: string, opts: ReturnType<import('./options.mjs').parseOptions>, gpu: {list: object[]}, started: number }} a */
export async function main({ root, opts, gpu, started }) {
  const { rehearsal, full, training } = opts;
  const outDir = opts.out ? path.resolve(opts.out) : null;
  if (outDir) mkdirSync(outDir, { recursive: true });
  const report = new Report({ outDir, started });
  const say = (l) => report.say(l);

  // ---- Paths: the packed layout (scripts/pack-gpu-smoke.sh) or a built checkout ------------------
  const pick = (...c) => c.find((p) => existsSync(p));
  const apiMain = pick(path.join(root, 'apps/api/bundle/main.cjs'), path.join(root, 'apps/api/dist/main.js'));
  const agentMain = pick(
    path.join(root, 'apps/gpu-agent/bundle/main.cjs'),
    path.join(root, 'apps/gpu-agent/dist/main.js'),
  );
  if (!apiMain || !agentMain) {
    console.error(
      'gpu-smoke: no API/agent build: run `npm run build` (or use the pack of scripts/pack-gpu-smoke.sh)',
    );
    process.exit(1);
  }
  const bwrap = pick(path.join(root, 'bin/bwrap'), '/usr/bin/bwrap');
  const dataDir = path.resolve(opts.data ?? path.join(root, '.data', `gpu-smoke-${process.pid}`));
  rmSync(dataDir, { recursive: true, force: true });
  mkdirSync(dataDir, { recursive: true });
  const which = (cmd) => spawnSync('sh', ['-c', `command -v ${cmd}`], { encoding: 'utf8' }).stdout.trim();
  const python =
    process.env.HARNESS_PYTHON ?? (rehearsal ? '/usr/bin/python3' : which('python3') || '/usr/bin/python3');

  // ---- The benchmark and the checkpoint ---------------------------------------------------------
  const benchDir = path.join(dataDir, 'benchmarks');
  // The training pass needs no checkpoint: the evaluator generates its sequences.
  const trainingBench = training ? writeTrainingBenchmark({ root, benchDir, rehearsal, gpu }) : null;
  const benchId = trainingBench?.benchId ?? writeBenchmark({ root, benchDir, rehearsal, full, gpu });
  const modelDir = rehearsal || training ? null : prepareCheckpoint({ root, python, model: opts.model, say });

  // ---- Hub and agent ----------------------------------------------------------------------------
  const procs = new Processes({ root, logDir: outDir ?? dataDir });
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const baseEnv = { ...process.env, DRYFT_ROOT: root };
  delete baseEnv.GITHUB_CLIENT_ID;
  delete baseEnv.GITHUB_CLIENT_SECRET;
  delete baseEnv.DATABASE_URL;
  const api = procs.start('api', [apiMain], {
    ...baseEnv,
    NODE_ENV: 'development',
    LOG_LEVEL: 'warn',
    PORT: String(port),
    HOST: '127.0.0.1',
    PUBLIC_URL: url,
    DATA_DIR: dataDir,
    BENCHMARKS_DIR: benchDir,
    ADMIN_LOGINS: OPERATOR,
    ...(process.env.GPU_SMOKE_DATABASE_URL ? { DATABASE_URL: process.env.GPU_SMOKE_DATABASE_URL } : {}),
  });
  const profile = training
    ? rehearsal
      ? '(training, CPU rehearsal: recurrence-cpu tasks, GPU memory and device OOM not checked)'
      : '(training SMOKE PROFILE)'
    : rehearsal
      ? '(CPU rehearsal, toy-decode)'
      : full
        ? '(FULL definition)'
        : '(SMOKE PROFILE)';
  const title = `gpu-smoke ${profile}: ${benchId} on ${gpu.list.map((g) => g.name).join(', ') || 'CPU'}${gpu.list[0] ? `, driver ${gpu.list[0].driver}` : ''}`;
  async function finish(code) {
    await procs.stopAll();
    report.printTable(title);
    if (!opts.keep) rmSync(dataDir, { recursive: true, force: true });
    process.exit(code);
  }
  process.on('SIGINT', () => void finish(130));
  process.on('SIGTERM', () => void finish(143));

  async function waitHealthy() {
    const deadline = Date.now() + 180_000;
    while (Date.now() < deadline) {
      if (api.child.exitCode !== null) break;
      try {
        if ((await fetch(`${url}/api/health`)).ok) return true;
      } catch {
        /* not yet */
      }
      await sleep(300);
    }
    return false;
  }
  // A FAIL row each, so the table never ends "all checks passed" for a hub that did not come up.
  if (!(await waitHealthy())) {
    report.record(
      'hub up',
      false,
      `the API did not become healthy; its log: ${api.logFile}\n${readFileSync(api.logFile, 'utf8').slice(-3000)}`,
    );
    await finish(1);
  }
  say(`hub up on ${url} (data ${dataDir})`);

  let participant;
  let agentId;
  try {
    const op = await OrganizerSession.signIn(url, OPERATOR);
    const created = await op.createAgent(`gpu-smoke ${gpu.list[0]?.name ?? 'cpu'}`);
    agentId = created.id;
    writeFileSync(path.join(dataDir, 'agent.token'), `${created.token}\n`, { mode: 0o600 });
    participant = new Participant(url, await op.teamToken('gpu smoke', 'gpu-smoke'));
  } catch (err) {
    report.record('hub set up (organizer, agent token, team)', false, err.message);
    await finish(1);
  }

  const slots = rehearsal
    ? [{ index: 0, gpus: [] }]
    : gpu.list.map((g, i) => ({ index: i, gpus: [g.index] }));
  const agentConfig = {
    apiUrl: url,
    tokenFile: path.join(dataDir, 'agent.token'),
    slots,
    ...(rehearsal ? { accelerator: 'cpu', gpuModel: null } : { accelerator: 'gpu' }),
    benchmarks: [benchId],
    harness: { python },
    models: modelDir ? { [benchId]: modelDir } : {},
    workDir: path.join(dataDir, 'agent-work'),
    repoDir: root,
  };
  writeFileSync(path.join(dataDir, 'agent.json'), JSON.stringify(agentConfig, null, 2));
  const agent = procs.start('agent', [agentMain, '--config', path.join(dataDir, 'agent.json')], {
    ...baseEnv,
    DRYFT_BWRAP: bwrap,
    NCCL_NVLS_ENABLE: '0',
  });
  say(
    `agent started: ${slots.length} slot(s) ${JSON.stringify(slots.map((s) => s.gpus))}, python ${python}, bwrap ${bwrap}`,
  );

  // ---- The agent's report -----------------------------------------------------------------------
  const op = await OrganizerSession.signIn(url, OPERATOR);
  let agentView = null;
  for (let i = 0; i < 240 && !agentView; i++) {
    const a = (await op.agents()).find((x) => x.id === agentId);
    if (a && a.status === 'online' && a.capabilities) agentView = a;
    else {
      if (agent.child.exitCode !== null) break;
      await sleep(500);
    }
  }
  if (!agentView) {
    report.record(
      'agent online',
      false,
      `never came online; log ${agent.logFile}:\n${readFileSync(agent.logFile, 'utf8').slice(-3000)}`,
    );
    await finish(1);
  }
  const caps = agentView.capabilities;
  report.record(
    'agent online',
    true,
    `${agentView.slots} slot(s), ${caps.accelerator}, ${caps.gpuModel ?? 'no GPU'} ×${caps.gpuCount}, driver ${caps.driver ?? '-'}`,
  );
  const rt = caps.runtime ?? {};
  const wanted = ['python', 'torch', 'cuda', 'triton', 'transformers', 'driver'];
  // CPU agents report no runtime (only GPU agents ask their interpreter at start).
  if (!rehearsal)
    report.record(
      'runtime versions reported',
      wanted.every((k) => rt[k]),
      Object.entries(rt)
        .map(([k, v]) => `${k} ${v}`)
        .join(', ') || 'none',
    );
  if (Object.keys(caps.cannotRun ?? {}).length)
    report.record(`agent can run ${training ? 'training' : 'decode'}`, false, JSON.stringify(caps.cannotRun));
  if (training) return runTraining();

  // ---- Training: submission.py files and their runs ----------------------------------------------
  async function runTraining() {
    const ctx = {
      root,
      report,
      participant,
      rehearsal,
      started,
      budgetS: opts.budgetS,
      benchId,
      training: { ...trainingBench, afterOom: false },
    };
    try {
      const files = trainingSubmissions({ root, rehearsal });
      const ids = {};
      for (const [name, content] of Object.entries(files))
        ids[name] = await participant.uploadFile(benchId, 'submission.py', content, name);
      say('uploaded: the sample submission.py, the offload cheat, the out-of-memory submission');
      const all = trainingSteps(ctx, ids);
      // The default order is the list --only is checked against (options.mjs), so the two cannot drift.
      for (const step of opts.only ?? TRAINING_STEPS) {
        if (!all[step])
          throw new Error(`--only: unknown step ${step} (one of ${Object.keys(all).join(', ')})`);
        await all[step]();
      }
      if (ctx.training.afterOom)
        report.record(
          'slot usable after the out-of-memory run',
          'info',
          'not checked: no run that should succeed came after it',
        );
    } catch (err) {
      report.record('the loop', false, err instanceof OutOfTime ? err.message : (err.stack ?? String(err)));
    }
    await finish(report.failed ? 1 : 0);
  }

  // ---- Submissions and runs ---------------------------------------------------------------------
  const { fastDir, files } = submissions({ root, rehearsal });
  const ctx = {
    root,
    report,
    participant,
    rehearsal,
    slots,
    started,
    budgetS: opts.budgetS,
    python,
    modelDir,
    fastDir,
    benchDir,
    benchId,
    gpu,
    op,
    calibrated: false,
    fastResult: null,
    fastRuns: [],
  };
  try {
    const ids = {};
    for (const name of ['starter', 'fast', 'perturbed', 'sandbox-view'])
      ids[name] = await participant.upload(benchId, name, files[name]);
    say('uploaded: the unchanged starter, the fast example, the perturbed-logit engine');
    const all = steps(ctx, ids);
    for (const step of opts.only ?? DECODE_STEPS) {
      if (!all[step]) throw new Error(`--only: unknown step ${step} (one of ${Object.keys(all).join(', ')})`);
      await all[step]();
    }
  } catch (err) {
    report.record('the loop', false, err instanceof OutOfTime ? err.message : (err.stack ?? String(err)));
  }

  // ---- The harness's cost per step (GPU runs, after a fast official run that succeeded) ----------
  if (!rehearsal && ctx.fastResult?.run.status === 'succeeded') {
    measuredCost(report, ctx.fastResult);
    inProcessCost(ctx, ctx.fastResult);
  }
  await finish(report.failed ? 1 : 0);
}
