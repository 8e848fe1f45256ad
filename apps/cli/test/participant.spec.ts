import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { benchmarkView, cli, json, runView, stubServer, submissionView, TOKEN } from './helpers';

/** The participant's path: starter-aware commands, the daily limit before uploading, --help --json, results as charts. */
const ROOT = path.resolve(__dirname, '../../..');
const MAIN = path.join(ROOT, 'apps/cli/dist/main.js');

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  while (closers.length) await closers.pop()!();
});

const toy = benchmarkView({ id: 'toy-decode' });
const tiered = benchmarkView({
  id: 'deep-recurrence',
  title: 'Deep recurrence',
  kind: 'training',
  submission: { type: 'file', filename: 'submission.py', maxBytes: 262144 },
  tiers: [
    {
      id: 'easy',
      title: 'Easy',
      trainingSeconds: 60,
      dailyLimit: 60,
      ranked: false,
      datasets: [{ id: 'square-mod-97', title: 'sq' }],
    },
    { id: 'hard', title: 'Hard', trainingSeconds: 3600, dailyLimit: 1, ranked: true, datasets: [] },
  ],
});

function quota(bucket: string, limit: number | null, used: number) {
  return {
    bucket,
    limit,
    used,
    remaining: limit === null ? null : Math.max(0, limit - used),
    resetsAt: '2026-12-01T00:00:00.000Z',
  };
}

/** A hub with toy-decode, qwen3-4b-decode and deep-recurrence; hard runs used today: `hardUsed`. */
async function hub(hardUsed = 0) {
  const stub = await stubServer((req, res) => {
    const url = new URL(req.path, 'http://x');
    if (url.pathname === '/api/benchmarks/toy-decode') return json(res, 200, toy);
    if (url.pathname === '/api/benchmarks/qwen3-4b-decode')
      return json(res, 200, benchmarkView({ id: 'qwen3-4b-decode' }));
    if (url.pathname === '/api/benchmarks/deep-recurrence') return json(res, 200, tiered);
    if (url.pathname === '/api/quota')
      return json(res, 200, [quota('easy', 60, 0), quota('medium', 20, 0), quota('hard', 1, hardUsed)]);
    if (url.pathname === '/api/submissions' && req.method === 'POST') {
      const benchmark = /name="benchmark"\r\n\r\n([^\r]+)/.exec(req.body)?.[1];
      return json(res, 201, { submission: submissionView({ benchmarkId: benchmark }), verdicts: [] });
    }
    if (url.pathname === '/api/submissions' || url.pathname === '/api/runs')
      return json(res, 200, { items: [], nextCursor: null });
    json(res, 404, { error: { code: 'not_found', message: req.path } });
  });
  closers.push(stub.close);
  return { stub, env: { DRYFT_TOKEN: TOKEN, DRYFT_API_URL: stub.url } };
}

const uploadedTo = (body: string) => /name="benchmark"\r\n\r\n([^\r]+)/.exec(body)?.[1];

/** The smallest engine.py that passes the entry-point check (class Engine with both methods). */
const ENGINE_PY =
  'class Engine:\n    def __init__(self, model_path):\n        pass\n\n    def generate(self, input_ids, max_new_tokens):\n        yield []\n';

describe("1. a starter's dryft.json decides the benchmark", () => {
  it('`submit engine` inside the toy-decode starter uploads to toy-decode and says so', async () => {
    const { stub, env } = await hub();
    const starter = path.join(ROOT, 'starters/toy-decode');
    // (in-process, the path is resolved against the test's own folder: give it whole)
    const r = await cli(['submit', path.join(starter, 'engine')], env, { cwd: starter });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toContain('Benchmark: toy-decode (from dryft.json)');
    const upload = stub.requests.find((q) => q.path === '/api/submissions' && q.method === 'POST')!;
    expect(uploadedTo(upload.body)).toBe('toy-decode');
  });

  it('is found from a subfolder, is used by `runs` and `submissions`, and --benchmark overrides it with a warning', async () => {
    const { stub, env } = await hub();
    const repo = mkdtempSync(path.join(tmpdir(), 'dryft-starter-'));
    writeFileSync(path.join(repo, 'dryft.json'), JSON.stringify({ benchmark: 'toy-decode' }));
    mkdirSync(path.join(repo, 'engine'));
    writeFileSync(path.join(repo, 'engine/engine.py'), ENGINE_PY);
    const runs = await cli(['runs'], env, { cwd: path.join(repo, 'engine') });
    expect(runs.code, runs.stderr).toBe(0);
    expect(runs.stderr).toContain(`Benchmark: toy-decode (from ${path.join('..', 'dryft.json')})`);
    expect(stub.requests.find((q) => q.path.startsWith('/api/runs'))!.path).toContain('benchmark=toy-decode');
    const subs = await cli(['submissions', '--benchmark', 'all'], env, { cwd: repo });
    expect(subs.code).toBe(0);
    expect(stub.requests.find((q) => q.path.startsWith('/api/submissions?'))!.path).not.toContain(
      'benchmark=',
    );
    const other = await cli(['submit', path.join(repo, 'engine'), '--benchmark', 'qwen3-4b-decode'], env, {
      cwd: repo,
    });
    expect(other.code, other.stderr).toBe(0);
    expect(other.stderr).toContain(
      "--benchmark qwen3-4b-decode is not this repository's benchmark (toy-decode, from dryft.json)",
    );
    expect(uploadedTo(stub.requests.filter((q) => q.method === 'POST').pop()!.body)).toBe('qwen3-4b-decode');
  });

  it('outside a starter the default is named as the default', async () => {
    const { env } = await hub();
    const dir = mkdtempSync(path.join(tmpdir(), 'dryft-nostarter-'));
    mkdirSync(path.join(dir, 'engine'));
    writeFileSync(path.join(dir, 'engine/engine.py'), ENGINE_PY);
    const r = await cli(['submit', path.join(dir, 'engine')], env, { cwd: dir });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toContain(
      'Benchmark: qwen3-4b-decode (the default for an engine folder or archive; no dryft.json here)',
    );
  });

  it('a broken dryft.json is refused with what to write, before any request', async () => {
    const { stub, env } = await hub();
    const repo = mkdtempSync(path.join(tmpdir(), 'dryft-badstarter-'));
    writeFileSync(path.join(repo, 'dryft.json'), '{"benchmark": ');
    const r = await cli(['runs'], env, { cwd: repo });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('dryft.json is not valid JSON');
    expect(r.stderr).toContain('{"benchmark": "toy-decode"}');
    writeFileSync(path.join(repo, 'dryft.json'), '{"benchmark": "Toy Decode"}');
    const bad = await cli(['runs', '--json'], env, { cwd: repo });
    expect(bad.code).toBe(2);
    expect(JSON.parse(bad.stdout).error.code).toBe('bad_starter_settings');
    expect(stub.requests.filter((q) => q.path.startsWith('/api/runs'))).toEqual([]);
  });
});

describe('3. the daily limit is checked before uploading', () => {
  const file = path.join(mkdtempSync(path.join(tmpdir(), 'dryft-quota-')), 'submission.py');
  writeFileSync(file, 'SUBMISSION = None\n');

  it('a Hard submit with no Hard run left today is refused and nothing is uploaded', async () => {
    const { stub, env } = await hub(1);
    const r = await cli(['submit', file, '--tier', 'hard', '--yes'], env);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("Today's limit of 1 hard run(s) on deep-recurrence is used up");
    expect(r.stderr).toContain('nothing was uploaded');
    expect(r.stderr).toContain('2026-12-01 00:00 UTC');
    expect(stub.requests.some((q) => q.path === '/api/submissions' && q.method === 'POST')).toBe(false);
    const j = await cli(['submit', file, '--tier', 'hard', '--yes', '--json'], env);
    expect(JSON.parse(j.stdout).error).toMatchObject({ code: 'daily_limit_reached', exitCode: 2 });
  });

  it("the official question shows what is left of today's limit (and No uploads nothing)", async () => {
    const { stub, env } = await hub(0);
    const r = await cli(['submit', file, '--tier', 'hard'], env, { tty: true, stdin: 'n\n' });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('start an OFFICIAL hard run on Deep recurrence?');
    expect(r.stderr).toContain('You have 1 of 1 left today (UTC).');
    expect(r.stderr).toContain('Not submitted.');
    expect(stub.requests.some((q) => q.path === '/api/submissions' && q.method === 'POST')).toBe(false);
  });
});

describe('3b. a script that journals its runs (the starter research loop)', () => {
  const file = path.join(mkdtempSync(path.join(tmpdir(), 'dryft-journal-')), 'submission.py');
  writeFileSync(file, 'SUBMISSION = None\n');

  /** The hub above, plus one submission and its runs (the answer to a run request: its key, or a 429). */
  async function runHub(runAnswer: 'created' | 'daily_limit' = 'created') {
    const sub = submissionView({ id: 'sub-1', benchmarkId: 'deep-recurrence' });
    const stub = await stubServer((req, res) => {
      const url = new URL(req.path, 'http://x');
      if (url.pathname === '/api/benchmarks/deep-recurrence') return json(res, 200, tiered);
      if (url.pathname === '/api/quota') return json(res, 200, [quota('easy', 60, 0)]);
      if (url.pathname === '/api/submissions' && req.method === 'POST')
        return json(res, 201, { submission: sub, verdicts: [] });
      if (url.pathname === '/api/submissions/sub-1') return json(res, 200, sub);
      if (url.pathname === '/api/submissions/sub-1/runs' && req.method === 'POST') {
        if (runAnswer === 'daily_limit')
          return json(res, 429, {
            error: { code: 'daily_limit_reached', message: "Today's 60 easy runs are used." },
          });
        return json(res, 201, {
          run: runView({ submissionId: 'sub-1', tier: 'easy' }),
          quota: quota('easy', 60, 1),
        });
      }
      json(res, 404, { error: { code: 'not_found', message: req.path } });
    });
    closers.push(stub.close);
    return { stub, env: { DRYFT_TOKEN: TOKEN, DRYFT_API_URL: stub.url } };
  }

  it('`submit --upload-only` uploads a single file without starting its run', async () => {
    const { stub, env } = await runHub();
    const r = await cli(['submit', file, '-b', 'deep-recurrence', '--upload-only', '--json'], env);
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout).submission.id).toBe('sub-1');
    expect(stub.requests.some((q) => q.path.endsWith('/runs'))).toBe(false);
    const refused = await cli(
      ['submit', file, '-b', 'deep-recurrence', '--upload-only', '--wait', '60'],
      env,
    );
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain('--upload-only starts no run');
  });

  it("`run --idempotency-key` sends the caller's key (and refuses a malformed one before asking)", async () => {
    const { stub, env } = await runHub();
    const key = '6f1c2a4e-8d0b-4b7e-9a51-3c2d1e0f9a87';
    const args = [
      'run',
      'sub-1',
      '--mode',
      'public',
      '--tier',
      'easy',
      '--dataset',
      'square-mod-97',
      '--json',
    ];
    const r = await cli([...args, '--idempotency-key', key], env);
    expect(r.code, r.stderr).toBe(0);
    const asked = stub.requests.filter((q) => q.path === '/api/submissions/sub-1/runs');
    expect(asked.map((q) => q.headers['idempotency-key'])).toEqual([key]);
    const bad = await cli([...args, '--idempotency-key', 'has space'], env);
    expect(bad.code).toBe(2);
    expect(JSON.parse(bad.stdout).error.code).toBe('invalid_idempotency_key');
    expect(stub.requests.filter((q) => q.path === '/api/submissions/sub-1/runs')).toHaveLength(1);
  });

  it("a refusal in --json carries the hub's HTTP status", async () => {
    const { env } = await runHub('daily_limit');
    const r = await cli(
      ['run', 'sub-1', '--mode', 'public', '--tier', 'easy', '--dataset', 'square-mod-97', '--json'],
      env,
    );
    expect(r.code).toBe(2);
    expect(JSON.parse(r.stdout).error).toMatchObject({
      code: 'daily_limit_reached',
      status: 429,
      exitCode: 2,
    });
  });
});

describe('4. --help --json', () => {
  it('prints the program and each command as JSON', async () => {
    const root = await cli(['--help', '--json']);
    expect(root.code).toBe(0);
    const doc = JSON.parse(root.stdout);
    expect(doc.command).toBe('dryft');
    expect(doc.commands.map((c: { name: string }) => c.name)).toEqual(
      expect.arrayContaining(['submit', 'run', 'logs', 'result', 'rank', 'cancel']),
    );
    expect(doc.exitCodes['6']).toBe('waitTimeout');
    const submit = JSON.parse((await cli(['submit', '--json', '--help'])).stdout);
    expect(submit.command).toBe('dryft submit');
    expect(submit.arguments).toEqual([
      { name: 'path', required: true, description: 'engine folder, .tar.gz archive, or submission.py' },
    ]);
    expect(submit.options.find((o: { name: string }) => o.name === 'mode')).toMatchObject({
      flags: '--mode <mode>',
      takesValue: true,
      choices: ['public', 'official'],
    });
    expect(submit.options.some((o: { name: string }) => o.name === 'apiUrl')).toBe(true);
  });
});

describe('5. result shows the loss curve and the per-sample timings', () => {
  it('training: a chart line and a few points per metric', async () => {
    const run = runView({
      status: 'succeeded',
      benchmarkId: 'deep-recurrence',
      tier: 'easy',
      dataset: 'square',
      score: 63,
    });
    const curve = Array.from({ length: 40 }, (_, i) => ({
      name: 'loss',
      step: i * 25,
      value: 2.5 / (1 + i),
      elapsedMs: i * 1500,
    }));
    const { env } = await resultHub({ run, curve, samples: [] });
    const r = await cli(['result', run.id], env);
    expect(r.code, r.stderr).toBe(0);
    // accuracy in percent, as the definition says
    expect(r.stdout).toContain('score 63.00%');
    expect(r.stdout).toContain('Score: 63.00% (public');
    expect(r.stdout).toContain('loss over 40 point(s), steps 0–975: 2.5 → 0.0625');
    const chart = r.stdout.split('\n').find((l) => /^ {2}[▁▂▃▄▅▆▇█]+$/.test(l))!;
    expect(chart.trim().length).toBe(40);
    expect(chart.trim()[0]).toBe('█');
    expect(chart.trim().at(-1)).toBe('▁');
    expect(r.stdout).toMatch(/STEP\s+LOSS\s+ELAPSED/);
    expect(r.stdout).toMatch(/\n975\s+0\.0625\s+59s\n/);
  });

  it('decode: every timed sample with a bar, warm-ups counted', async () => {
    const run = runView({ status: 'succeeded', score: 120 });
    const sample = (index: number, warmup: boolean, totalMs: number) => ({
      workload: 'short',
      index,
      warmup,
      ttftMs: 4,
      tpotMs: 0.5,
      tps: 2000,
      totalMs,
      tokens: 64,
    });
    const { env } = await resultHub({
      run,
      samples: [sample(0, true, 99), sample(1, false, 40), sample(2, false, 80)],
    });
    const r = await cli(['result', run.id], env);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain('Timed samples (1 warm-up sample(s) not shown)');
    expect(r.stdout).toMatch(/short\s+1\s+40\.0\s+4\.00\s+0\.500\s+2000\.0\s+\[########--------\]/);
    expect(r.stdout).toMatch(/short\s+2\s+80\.0 .*\[################\]/);
  });

  it('decode official through a calibrated K: the ranking and absolute intervals and what was measured', async () => {
    const run = runView({ status: 'succeeded', score: 120, mode: 'official' });
    const { env } = await resultHub({
      run,
      samples: [],
      extra: {
        interval: { low: 118, high: 122, halfWidth: 2, level: 0.95 },
        pairs: 12,
        absoluteInterval: { low: 115.5, high: 124.5, halfWidth: 4.5, level: 0.95 },
        scoring: {
          against: 'reference',
          calibrated: true,
          hardware: 'NVIDIA H200',
          kHalfWidthPct: 0.8,
          note: 'Paired with the reference engine; K calibrated on NVIDIA H200 to ±0.8 %.',
        },
      },
    });
    const r = await cli(['result', run.id], env);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain('± 2.00 (95 % interval 118.00–122.00, 12 pairs) (official)');
    expect(r.stdout).toContain("  Absolute interval (with K's): 115.50–124.50");
    expect(r.stdout).toContain('  Paired with the reference engine; K calibrated on NVIDIA H200 to ±0.8 %.');
  });

  it('decode public that measured its own baseline: says so, never "against the cached baseline"', async () => {
    const run = runView({ status: 'succeeded', score: 97.4, mode: 'public' });
    const note =
      'one sample per workload against the baseline measured just before on this machine (5 timed samples per workload)';
    const { env } = await resultHub({
      run,
      samples: [],
      extra: {
        indicative: true,
        scoring: { against: 'baseline', calibrated: false, hardware: 'cpu', kHalfWidthPct: null, note },
      },
    });
    const r = await cli(['result', run.id], env);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain('97.4');
    expect(r.stdout).toContain('(public, indicative: one sample per workload; never ranked)');
    expect(r.stdout).toContain(`  ${note}`);
    expect(r.stdout).not.toContain('cached baseline');
  });

  it('rounds the run metrics as the rest of the output does', async () => {
    const run = runView({ status: 'succeeded', benchmarkId: 'deep-recurrence', tier: 'easy', score: 63.12 });
    const { env } = await resultHub({
      run,
      samples: [],
      metrics: { accuracy: 63.119999999999997, loss: 0.012345678, updates: 480 },
    });
    const r = await cli(['result', run.id], env);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/accuracy\s+63\.12\n/);
    expect(r.stdout).toMatch(/loss\s+0\.01235\n/);
    expect(r.stdout).toMatch(/updates\s+480\n/);
    expect(r.stdout).not.toContain('63.119999');
  });

  it('a run the whole-run limit canceled: `result` and `runs` say so, with the limit in force', async () => {
    const run = runView({
      status: 'canceled',
      failureCode: null,
      score: null,
      message: "Canceled: the run exceeded the organizer's whole-run time limit of 120 s.",
      cancelReason: 'whole-run time limit (120 s) exceeded',
      quotaRefunded: false,
    });
    const { env } = await resultHub({ run, samples: [] });
    const r = await cli(['result', run.id], env);
    expect(r.code).toBe(1); // EXIT.runFailed, as for every run that did not succeed
    expect(r.stdout).toContain(`Run ${run.id}: canceled`);
    expect(r.stdout).toContain("  Canceled: the run exceeded the organizer's whole-run time limit of 120 s.");
    expect(r.stdout).toContain('  canceled: whole-run time limit (120 s) exceeded');
    expect(r.stdout).not.toMatch(/timeout|Refunded/);
    const stub = await stubServer((req, res) =>
      req.path.startsWith('/api/runs?')
        ? json(res, 200, {
            items: [run, runView({ status: 'canceled', cancelReason: 'wrong file', failureCode: null })],
            nextCursor: null,
          })
        : json(res, 404, { error: { code: 'not_found', message: req.path } }),
    );
    closers.push(stub.close);
    const list = await cli(['runs'], { DRYFT_TOKEN: TOKEN, DRYFT_API_URL: stub.url });
    expect(list.code, list.stderr).toBe(0);
    expect(list.stdout).toContain('canceled (whole-run limit)');
    expect(list.stdout.match(/canceled/g)).toHaveLength(2);
  });

  async function resultHub(body: {
    run: ReturnType<typeof runView>;
    samples: unknown[];
    curve?: unknown[];
    extra?: Record<string, unknown>;
    metrics?: Record<string, number>;
  }) {
    const stub = await stubServer((req, res) => {
      if (req.path === `/api/runs/${body.run.id}`) return json(res, 200, body.run);
      if (req.path === `/api/runs/${body.run.id}/result`)
        return json(res, 200, {
          run: body.run,
          score: body.run.score,
          interval: null,
          pairs: null,
          indicative: false,
          workloads: [],
          samples: body.samples,
          checks: [],
          metrics: body.metrics ?? {},
          detail: null,
          complete: true,
          ...(body.curve ? { curve: body.curve } : {}),
          ...body.extra,
        });
      json(res, 404, { error: { code: 'not_found', message: req.path } });
    });
    closers.push(stub.close);
    return { env: { DRYFT_TOKEN: TOKEN, DRYFT_API_URL: stub.url } };
  }
});

describe.skipIf(!existsSync(MAIN))('2. a reader that stops early (the built CLI, a real pipe)', () => {
  it('`dryft logs ID | head -2` and `dryft --help | head -1` end quietly', async () => {
    const run = runView({ status: 'succeeded' });
    const lines = Array.from({ length: 3000 }, (_, i) => ({
      seq: i + 1,
      ts: 1,
      stream: 'out',
      text: `line ${i + 1} ${'x'.repeat(80)}`,
    }));
    const stub = await stubServer((req, res) => {
      const url = new URL(req.path, 'http://x');
      const after = Number(url.searchParams.get('after') ?? 0);
      const items = lines.slice(after, after + 500);
      json(res, 200, {
        items,
        nextAfter: after + items.length,
        complete: after + items.length >= lines.length,
      });
    });
    closers.push(stub.close);
    const env = { PATH: process.env.PATH, HOME: tmpdir(), DRYFT_TOKEN: TOKEN, DRYFT_API_URL: stub.url };
    // asynchronously: the stub hub answers from this process
    const sh = (cmd: string) =>
      new Promise<{ out: string }>((resolve) => {
        const child = spawn('bash', ['-c', `${cmd}; echo "status=\${PIPESTATUS[0]}" >&2`], { env });
        let out = '';
        child.stdout.on('data', (c) => (out += c));
        child.stderr.on('data', (c) => (out += c));
        child.on('close', () => resolve({ out }));
      });
    const logs = await sh(`node ${MAIN} logs ${run.id} | head -2`);
    expect(logs.out).toMatch(/^\[out\] line 1 x+\n\[out\] line 2 x+\nstatus=0\n$/);
    const help = await sh(`node ${MAIN} --help | head -1`);
    expect(help.out).toMatch(/^Usage: dryft \[options\] \[command\]\nstatus=0\n$/);
  });
});
