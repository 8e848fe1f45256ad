import type { RunAssign, RunBatch, RunFinished } from '@dryft/libs';
import { createHash, randomUUID } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, realpathSync, rmSync } from 'node:fs';
import { createServer, Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AgentConfig } from '../src/config';
import { agentConfig } from './builders';
import { tempPrefix, tempRoot } from '../src/leftovers';
import { resumeKeptRun } from '../src/agent';
import { RunJob } from '../src/run-job';
import type { RunHost } from '../src/run-job';

/**
 * One RunJob from download to wiped folder, unsandboxed, with the real events wrapper and a tiny
 * shell script in the harness's place; the socket to the hub is a fake that records every batch and
 * can hold its acknowledgements back or refuse for good.
 */
const SUBMISSION = Buffer.from('print("an engine")\n');
const SHA = createHash('sha256').update(SUBMISSION).digest('hex');
const RESULT = {
  type: 'result',
  status: 'succeeded',
  failureCode: null,
  message: 'All checks passed.',
  score: 123,
  workloads: [],
  metrics: {},
};

let server: Server;
let apiUrl: string;
let workDir: string;
beforeAll(async () => {
  server = createServer((req, res) => res.end(req.url === '/dl/ok' ? SUBMISSION : 'other bytes'));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  apiUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  workDir = realpathSync(mkdtempSync(path.join(tmpdir(), 'dryft-runjob-')));
});
afterAll(async () => {
  await new Promise((r) => server.close(r));
  rmSync(workDir, { recursive: true, force: true });
});

const until = async (what: string, check: () => boolean, ms = 10_000) => {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
};

function assign(url = '/dl/ok'): RunAssign {
  return {
    runId: randomUUID(),
    benchmarkId: 'toy-decode',
    mode: 'public',
    slot: 0,
    submission: { url, sha256: SHA, kind: 'file', filename: 'submission.py' },
    spec: {
      kind: 'decode',
      benchmark: 'toy-decode',
      mode: 'public',
      rulesVersion: 1,
      model: { family: 'toy', path: 'models/toy' },
      baselineEngine: 'starters/toy-decode/engine',
      workloads: [{ name: 'b1', batchSize: 1, promptLength: 4, maxNewTokens: 4, seed: 1 }],
      samplesPerWorkload: 1,
      warmupSamples: 0,
      limits: { loadSeconds: 5, sampleSeconds: 5, runSeconds: 30, memoryBytes: null, memoryMeasure: 'none' },
      checks: { maxTtftMs: null, maxTpotMs: null, maxRatioSpreadPct: 50, logitTolerance: 0 },
      baseline: null,
    },
    deadlineAt: Date.now() + 60_000,
  };
}

/** The harness's stand-in: a shell script; it writes its events to fd 3 as the harness does. */
function config(script: string, cancelGraceMs = 5_000): AgentConfig {
  return agentConfig({
    apiUrl,
    harness: {
      python: process.env.HARNESS_PYTHON ?? '/usr/bin/python3',
      dir: workDir,
      command: ['/bin/sh', '-c', script],
    },
    workDir,
    repoDir: workDir,
    insecureNoSandbox: true,
    cancelGraceMs,
  });
}

type Line = { n: number; stream: string; text: string };

/** The host side: the hub's socket as a fake that stores batches, and the calls the job made. */
function host(cfg: AgentConfig, answer: (b: RunBatch) => Promise<unknown> | unknown = () => undefined) {
  const batches: RunBatch[] = [];
  const finished: RunFinished[] = [];
  const started: string[] = [];
  const logs: string[] = [];
  /** What happened, in order: `ack N` when batch N was acknowledged, `finished` for the verdict. */
  const order: string[] = [];
  const h: RunHost = {
    config: cfg,
    sandboxed: false,
    connected: () => true,
    sendBatch: async (b) => {
      const custom = await answer(b);
      if (custom !== undefined) return custom;
      if (!batches.some((x) => x.seq === b.seq)) batches.push(b);
      order.push(`ack ${b.seq}`);
      return { ok: true, ackedSeq: b.seq };
    },
    started: async (runId) => void started.push(runId),
    finished: async (msg) => {
      order.push('finished');
      finished.push(msg);
    },
    handback: async () => false,
    log: (m) => logs.push(m),
  };
  const lines = (): Line[] =>
    batches.flatMap((b) => b.entries.filter((e) => e.type === 'log') as unknown as Line[]);
  return { h, batches, finished, started, logs, order, lines };
}

/** Nothing of the run is left: its folder, and the events socket's folder in /tmp. */
function leftovers(runId: string): string[] {
  const prefix = tempPrefix(workDir);
  return [
    ...(existsSync(path.join(workDir, 'runs', runId)) ? [path.join(workDir, 'runs', runId)] : []),
    ...readdirSync(tempRoot()).filter((f) => f.startsWith(prefix)),
  ];
}

describe('RunJob: the lifecycle of one run', () => {
  it('reports the verdict only after every log batch is acknowledged, naming the last batch', async () => {
    const script = [
      'echo "hello from the harness"',
      `printf '%s\\n' '{"type":"log","level":"info","message":"measuring"}' >&3`,
      `printf '%s\\n' '{"type":"check","name":"output","passed":true,"detail":"every token matched"}' >&3`,
      `printf '%s\\n' '${JSON.stringify(RESULT)}' >&3`,
      'echo "bye"',
    ].join('; ');
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    // The hub is slow to acknowledge the batch with the harness's last line.
    const t = host(config(script), async (b) => {
      if (b.entries.some((e) => e.type === 'log' && e.text === 'bye')) await held;
      return undefined;
    });
    const a = assign();
    const job = new RunJob(a, t.h, []);
    const running = job.execute();
    await until('the harness to end', () => job.phase === 'finishing');
    await new Promise((r) => setTimeout(r, 300));
    expect(t.finished).toEqual([]);
    release();
    await running;
    expect(t.started).toEqual([a.runId]);
    expect(t.finished).toHaveLength(1);
    const lastSeq = Math.max(...t.batches.map((b) => b.seq));
    expect(t.finished[0]).toMatchObject({
      runId: a.runId,
      lastSeq,
      canceled: false,
      exitCode: 0,
      result: RESULT,
    });
    // The verdict came after the acknowledgement of every batch.
    expect(t.order.indexOf('finished')).toBeGreaterThan(t.order.indexOf(`ack ${lastSeq}`));
    expect(t.order.at(-1)).toBe('finished');
    const lines = t.lines();
    expect(lines.map((l) => l.n)).toEqual(lines.map((_, i) => i + 1));
    // The terminal and the events channel are two streams: each keeps its own order.
    const of = (stream: string) => lines.filter((l) => l.stream === stream).map((l) => l.text);
    expect(of('out')).toEqual(['hello from the harness', 'bye']);
    expect(of('harness')).toEqual(['measuring']);
    expect(t.batches.flatMap((b) => b.entries.filter((e) => e.type === 'event'))).toHaveLength(1);
    expect(leftovers(a.runId)).toEqual([]);
  });

  it('a calibration run: nothing to download, the reference engine resolved in the checkout like the baseline', async () => {
    const read = `import json; s = json.load(open('{spec}')); print('mode=' + s['mode']); print('ref=' + s['referenceEngine']); print('base=' + s['baselineEngine'])`;
    const script = [`/usr/bin/python3 -c "${read}"`, `printf '%s\\n' '${JSON.stringify(RESULT)}' >&3`].join(
      '; ',
    );
    const t = host(config(script));
    const base = assign();
    const a: RunAssign = {
      ...base,
      mode: 'calibration',
      submission: null,
      spec: {
        ...base.spec,
        mode: 'calibration',
        referenceEngine: 'harness/reference/toy',
      } as RunAssign['spec'],
    };
    await new RunJob(a, t.h, []).execute();
    const out = t
      .lines()
      .filter((l) => l.stream === 'out')
      .map((l) => l.text);
    expect(out).toEqual([
      'mode=calibration',
      `ref=${path.join(workDir, 'harness/reference/toy')}`,
      `base=${path.join(workDir, 'starters/toy-decode/engine')}`,
    ]);
    expect(t.lines().some((l) => l.text.includes('calibration: no submission to fetch'))).toBe(true);
    expect(t.finished).toHaveLength(1);
  });

  it("hands the slot's CPU list to the harness (DRYFT_ENGINE_CPUS), and nothing for a slot without one", async () => {
    const script = [
      'echo "cpus=[${DRYFT_ENGINE_CPUS-unset}]"',
      `printf '%s\\n' '${JSON.stringify(RESULT)}' >&3`,
    ].join('; ');
    const pinned = config(script);
    pinned.slots = [{ index: 0, gpus: [], cpus: '0,1' }];
    const out: string[][] = [];
    for (const cfg of [pinned, config(script)]) {
      const t = host(cfg);
      await new RunJob(assign(), t.h, []).execute();
      expect(t.finished).toHaveLength(1);
      out.push(
        t
          .lines()
          .filter((l) => l.stream === 'out')
          .map((l) => l.text),
      );
    }
    expect(out).toEqual([['cpus=[0,1]'], ['cpus=[unset]']]);
    // the config refuses what taskset would not take, saying what to write
    const { SlotConfig } = await import('../src/config');
    expect(SlotConfig.safeParse({ index: 0, cpus: '4-7,9' }).success).toBe(true);
    const bad = SlotConfig.safeParse({ index: 0, cpus: '4-' });
    expect(bad.success).toBe(false);
    expect(bad.error?.issues[0].message).toMatch(/taskset -c .*"4-7"/);
  });

  it('stops and reports nothing when the hub refuses a batch for good; still wipes everything', async () => {
    const t = host(config('echo "engine output"; sleep 30'), (b) =>
      b.entries.some((e) => e.type === 'log' && e.stream === 'out')
        ? {
            ok: false,
            final: true,
            error: { code: 'run_not_assigned', message: 'This run is not assigned to this agent.' },
          }
        : undefined,
    );
    const a = assign();
    const job = new RunJob(a, t.h, []);
    const t0 = Date.now();
    await job.execute();
    expect(Date.now() - t0).toBeLessThan(10_000); // the harness was stopped, not waited for
    expect(t.started).toEqual([a.runId]);
    expect(t.finished).toEqual([]);
    expect(t.logs.join('\n')).toMatch(/refused batch \d+ for good \(run_not_assigned/);
    expect(leftovers(a.runId)).toEqual([]);
  });

  it('cancels once: TERM, then KILL after the grace, one verdict "canceled", everything wiped', async () => {
    const t = host(config('trap "" TERM; echo ready; while :; do sleep 0.05; done', 400));
    const a = assign();
    const job = new RunJob(a, t.h, []);
    const running = job.execute();
    await until('the harness to run', () => t.lines().some((l) => l.text === 'ready'));
    job.stop('cancel', 'canceled by the owner');
    job.stop('cancel', 'canceled again');
    job.stop('deadline', "the run reached the organizer's whole-run time limit");
    await running;
    job.stop('cancel', 'after the end: ignored');
    expect(t.finished).toHaveLength(1);
    expect(t.finished[0]).toMatchObject({
      canceled: true,
      exitCode: null,
      result: { status: 'failed', failureCode: null, message: 'Canceled: canceled by the owner' },
    });
    const agent = t
      .lines()
      .filter((l) => l.stream === 'agent')
      .map((l) => l.text);
    expect(agent.filter((x) => x.startsWith('stopping:'))).toEqual(['stopping: canceled by the owner']);
    expect(agent.filter((x) => x.includes('grace period'))).toEqual([
      'still running after the grace period: killing',
    ]);
    expect(leftovers(a.runId)).toEqual([]);
  });

  it("a kept run takes agent.ready's deadline: lowered while the agent was away, it is canceled there for the whole-run limit", async () => {
    const t = host(config('echo ready; while :; do sleep 0.05; done', 400));
    const a = assign(); // its deadline a minute away, as assigned
    const job = new RunJob(a, t.h, []);
    const running = job.execute();
    await until('the harness to run', () => t.lines().some((l) => l.text === 'ready'));
    const lowered = Date.now() + 300;
    resumeKeptRun(job, { runId: a.runId, ackedSeq: 0, keep: true, deadlineAt: lowered });
    await running;
    const stoppedAfter = Date.now() - lowered;
    expect(stoppedAfter).toBeGreaterThanOrEqual(0);
    expect(stoppedAfter).toBeLessThan(5_000);
    expect(t.finished).toHaveLength(1);
    expect(t.finished[0]).toMatchObject({
      canceled: true,
      cancelReason: 'run_time_limit',
      result: { status: 'failed', failureCode: null },
    });
    expect(leftovers(a.runId)).toEqual([]);
  });

  it('a kept run without a deadline in the answer (an older hub) keeps its own', async () => {
    const t = host(config('echo ready; sleep 0.3; echo done'));
    const a = assign();
    const job = new RunJob(a, t.h, []);
    const running = job.execute();
    await until('the harness to run', () => t.lines().some((l) => l.text === 'ready'));
    resumeKeptRun(job, { runId: a.runId, ackedSeq: 0, keep: true });
    await running;
    expect(t.lines().some((l) => l.text === 'done')).toBe(true);
    expect(t.finished[0]?.result.failureCode).not.toBe('timeout');
  });

  it('a download that is not the submission fails as infra_error before anything starts', async () => {
    const t = host(config('echo "never runs"'));
    const a = assign('/dl/other');
    await new RunJob(a, t.h, []).execute();
    expect(t.started).toEqual([]);
    expect(t.finished[0]).toMatchObject({
      canceled: false,
      exitCode: null,
      result: {
        status: 'failed',
        failureCode: 'infra_error',
        message: 'The GPU agent could not prepare this run; retry once.',
      },
    });
    expect(t.lines().map((l) => l.text)).toContainEqual(
      expect.stringMatching(
        /^could not prepare the run: the download's sha256 [0-9a-f]{64} is not the submission's/,
      ),
    );
    expect(t.lines().some((l) => l.text === 'never runs')).toBe(false);
    expect(leftovers(a.runId)).toEqual([]);
  });
});
