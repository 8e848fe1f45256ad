import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { afterEach, describe, expect, it } from 'vitest';
import { benchmarkView, cli, json, resultBody, runView, stubServer, submissionView, TOKEN } from './helpers';

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  while (closers.length) await closers.pop()!();
});

const SUB = submissionView().id as string;

function createdBody(run = runView()) {
  return {
    run,
    quota: { bucket: 'public', limit: null, used: 1, remaining: null, resetsAt: '2026-12-01T00:00:00.000Z' },
  };
}

describe('run creation is idempotent across retries', () => {
  it('reuses one Idempotency-Key after a 503, a dropped connection and a 409, and starts one run', async () => {
    let attempts = 0;
    const stub = await stubServer((req, res) => {
      if (req.path === `/api/submissions/${SUB}`) return json(res, 200, submissionView());
      if (req.path === '/api/benchmarks/toy-decode') return json(res, 200, benchmarkView());
      if (req.path === `/api/submissions/${SUB}/runs`) {
        attempts += 1;
        if (attempts === 1) return json(res, 503, { error: { code: 'unavailable', message: 'restarting' } });
        if (attempts === 2) return void res.socket?.destroy(); // uncertain: did it start?
        if (attempts === 3)
          return json(res, 409, {
            error: { code: 'idempotency_in_flight', message: 'still being processed' },
          });
        return json(res, 201, createdBody());
      }
      json(res, 404, { error: { code: 'not_found', message: req.path } });
    });
    closers.push(stub.close);
    const r = await cli(['run', SUB, '--mode', 'public'], { DRYFT_TOKEN: TOKEN, DRYFT_API_URL: stub.url });
    expect(r.code, r.stderr).toBe(0);
    const posts = stub.requests.filter((q) => q.method === 'POST');
    expect(posts).toHaveLength(4);
    const keys = new Set(posts.map((p) => p.headers['idempotency-key']));
    expect(keys.size).toBe(1);
    expect([...keys][0]).toMatch(/^[0-9a-f-]{36}$/);
    expect(JSON.parse(posts[0].body)).toEqual({ mode: 'public' });
    expect(r.stdout).toContain(`Started public run ${runView().id}`);
    expect(r.stderr).toContain('retrying with the same Idempotency-Key');
    // Never the token in any output.
    expect(r.stdout + r.stderr).not.toContain(TOKEN);
  });

  it('uses a new key for the next intended run', async () => {
    const stub = await stubServer((req, res) => {
      if (req.path === `/api/submissions/${SUB}`) return json(res, 200, submissionView());
      if (req.path === '/api/benchmarks/toy-decode') return json(res, 200, benchmarkView());
      return json(res, 201, createdBody());
    });
    closers.push(stub.close);
    const env = { DRYFT_TOKEN: TOKEN, DRYFT_API_URL: stub.url };
    await cli(['run', SUB, '--mode', 'public'], env);
    await cli(['run', SUB, '--mode', 'public'], env);
    const keys = stub.requests.filter((q) => q.method === 'POST').map((p) => p.headers['idempotency-key']);
    expect(new Set(keys).size).toBe(2);
  });

  it('does not retry a refusal (422 → exit 2, 429 → exit 2 with the reset time)', async () => {
    let status = 422;
    const stub = await stubServer((req, res) => {
      if (req.path === `/api/submissions/${SUB}`) return json(res, 200, submissionView());
      if (req.path === '/api/benchmarks/toy-decode') return json(res, 200, benchmarkView());
      return json(res, status, {
        error: { code: status === 422 ? 'idempotency_mismatch' : 'daily_limit', message: 'no' },
      });
    });
    closers.push(stub.close);
    const env = { DRYFT_TOKEN: TOKEN, DRYFT_API_URL: stub.url };
    expect((await cli(['run', SUB, '--mode', 'public'], env)).code).toBe(2);
    status = 429;
    const r = await cli(['run', SUB, '--mode', 'public'], env);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('resets at 00:00 UTC');
    expect(stub.requests.filter((q) => q.method === 'POST')).toHaveLength(2);
  });
});

describe('official runs need confirmation', () => {
  it('refuses without a TTY and without --yes, before sending anything', async () => {
    const stub = await stubServer((req, res) => {
      if (req.path === `/api/submissions/${SUB}`) return json(res, 200, submissionView());
      if (req.path === '/api/benchmarks/toy-decode') return json(res, 200, benchmarkView());
      return json(res, 201, createdBody(runView({ mode: 'official' })));
    });
    closers.push(stub.close);
    const env = { DRYFT_TOKEN: TOKEN, DRYFT_API_URL: stub.url };
    const r = await cli(['run', SUB, '--mode', 'official'], env);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('pass --yes');
    expect(stub.requests.some((q) => q.method === 'POST')).toBe(false);
    const ok = await cli(['run', SUB, '--mode', 'official', '--yes'], env);
    expect(ok.code).toBe(0);
    expect(JSON.parse(stub.requests.find((q) => q.method === 'POST')!.body)).toEqual({
      mode: 'official',
      confirm: true,
    });
  });
});

describe('tiers and datasets (single-file)', () => {
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
  const file = path.join(mkdtempSync(path.join(tmpdir(), 'dryft-sf-')), 'submission.py');
  writeFileSync(file, 'SUBMISSION = None\n');

  async function setup() {
    const sub = submissionView({ benchmarkId: 'deep-recurrence', kind: 'file' });
    const stub = await stubServer((req, res) => {
      if (req.path === '/api/benchmarks/deep-recurrence') return json(res, 200, tiered);
      if (req.path === '/api/submissions' && req.method === 'POST')
        return json(res, 201, { submission: sub, verdicts: [] });
      if (req.path.endsWith('/runs')) {
        const body = JSON.parse(req.body);
        return json(
          res,
          201,
          createdBody(
            runView({
              benchmarkId: 'deep-recurrence',
              mode: body.mode,
              tier: body.tier,
              dataset: body.dataset ?? null,
            }),
          ),
        );
      }
      json(res, 404, { error: { code: 'not_found', message: req.path } });
    });
    closers.push(stub.close);
    return { stub, env: { DRYFT_TOKEN: TOKEN, DRYFT_API_URL: stub.url } };
  }

  it('requires --tier, and --dataset for a practice tier, before uploading', async () => {
    const { stub, env } = await setup();
    const noTier = await cli(['submit', file], env);
    expect(noTier.code).toBe(2);
    expect(noTier.stderr).toContain('needs --tier (one of: easy, hard)');
    const noDataset = await cli(['submit', file, '--tier', 'easy'], env);
    expect(noDataset.code).toBe(2);
    expect(noDataset.stderr).toContain('needs --dataset (one of: square-mod-97)');
    const hardWithDataset = await cli(
      ['submit', file, '--tier', 'hard', '--dataset', 'square-mod-97', '--yes'],
      env,
    );
    expect(hardWithDataset.code).toBe(2);
    expect(stub.requests.some((q) => q.path === '/api/submissions')).toBe(false);
  });

  it('uploads submission.py to deep-recurrence by default and starts a public easy run', async () => {
    const { stub, env } = await setup();
    const r = await cli(['submit', file, '--tier', 'easy', '--dataset', 'square-mod-97'], env);
    expect(r.code, r.stderr).toBe(0);
    const upload = stub.requests.find((q) => q.path === '/api/submissions')!;
    expect(upload.headers['content-type']).toMatch(/^multipart\/form-data; boundary=/);
    expect(upload.body).toContain('name="benchmark"\r\n\r\ndeep-recurrence');
    expect(upload.body).toContain('filename="submission.py"');
    const run = stub.requests.find((q) => q.path.endsWith('/runs'))!;
    expect(JSON.parse(run.body)).toEqual({ mode: 'public', tier: 'easy', dataset: 'square-mod-97' });
  });

  it('makes the ranked Hard tier an official run that needs --yes without a terminal', async () => {
    const { stub, env } = await setup();
    const refused = await cli(['submit', file, '--tier', 'hard'], env);
    expect(refused.code).toBe(2);
    expect(stub.requests.some((q) => q.path === '/api/submissions')).toBe(false);
    const r = await cli(['submit', file, '--tier', 'hard', '--yes'], env);
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(stub.requests.find((q) => q.path.endsWith('/runs'))!.body)).toEqual({
      mode: 'official',
      tier: 'hard',
      confirm: true,
    });
  });
});

describe('errors map to exit codes with advice', () => {
  it('401 → exit 3 with the troubleshooting advice and never the token', async () => {
    const stub = await stubServer((_req, res) =>
      json(res, 401, { error: { code: 'invalid_token', message: 'This token is revoked.' } }),
    );
    closers.push(stub.close);
    const r = await cli(['runs'], { DRYFT_TOKEN: TOKEN, DRYFT_API_URL: stub.url });
    expect(r.code).toBe(3);
    expect(r.stderr).toContain('DRYFT_TOKEN is set in the same terminal');
    expect(r.stderr).toContain('still a member');
    expect(r.stderr).toContain('dryft doctor');
    expect(r.stderr).not.toContain(TOKEN);
    expect(stub.requests[0].headers.authorization).toBe(`Bearer ${TOKEN}`);
  });

  it('403 → 3, 404 → 2 with where to find the id, 500 → 5 (after retrying a GET)', async () => {
    let status = 403;
    const stub = await stubServer((_req, res) =>
      json(res, status, { error: { code: `e${status}`, message: 'm' } }),
    );
    closers.push(stub.close);
    const env = { DRYFT_TOKEN: TOKEN, DRYFT_API_URL: stub.url };
    expect((await cli(['rank', runView().id as string], env)).code).toBe(3);
    status = 404;
    const nf = await cli(['rank', runView().id as string], env);
    expect(nf.code).toBe(2);
    expect(nf.stderr).toContain('Run ID');
    status = 500;
    const before = stub.requests.length;
    expect((await cli(['rank', runView().id as string], env)).code).toBe(5);
    expect(stub.requests.length - before).toBe(3);
  });

  it('API down → exit 4; --json errors are JSON on stdout', async () => {
    const stub = await stubServer((_req, res) => json(res, 200, {}));
    const url = stub.url;
    await stub.close();
    const r = await cli(['--json', 'runs'], { DRYFT_TOKEN: TOKEN, DRYFT_API_URL: url });
    expect(r.code).toBe(4);
    expect(r.stderr).toContain('Cannot reach the Dryft API');
    expect(JSON.parse(r.stdout).error).toMatchObject({ code: 'network', exitCode: 4 });
  });

  it('no token and a mistyped token → exit 3 before any request', async () => {
    const stub = await stubServer((_req, res) => json(res, 200, {}));
    closers.push(stub.close);
    const none = await cli(['runs'], {
      DRYFT_API_URL: stub.url,
      XDG_CONFIG_HOME: mkdtempSync(path.join(tmpdir(), 'dryft-x-')),
    });
    expect(none.code).toBe(3);
    expect(none.stderr).toContain('dryft login');
    const typo = TOKEN.slice(0, -1) + (TOKEN.endsWith('a') ? 'b' : 'a');
    const bad = await cli(['runs'], { DRYFT_TOKEN: typo, DRYFT_API_URL: stub.url });
    expect(bad.code).toBe(3);
    expect(bad.stderr).toContain('checksum');
    expect(bad.stderr).not.toContain(typo);
    expect(stub.requests).toHaveLength(0);
  });
});

describe('waiting', () => {
  it('run --wait exits 0 on success, 1 on failure, 6 when the wait runs out', async () => {
    let final = 'succeeded';
    let polls = 0;
    const stub = await stubServer((req, res) => {
      if (req.path === `/api/submissions/${SUB}`) return json(res, 200, submissionView());
      if (req.path === '/api/benchmarks/toy-decode') return json(res, 200, benchmarkView());
      if (req.method === 'POST') return json(res, 201, createdBody());
      polls += 1;
      if (final === 'never') return json(res, 200, runView({ status: 'running', queuePosition: null }));
      return json(
        res,
        200,
        runView({
          status: polls < 3 ? 'running' : final,
          failureCode: final === 'failed' ? 'incorrect_output' : null,
          message: final === 'failed' ? 'token 3 differs' : null,
        }),
      );
    });
    closers.push(stub.close);
    const env = { DRYFT_TOKEN: TOKEN, DRYFT_API_URL: stub.url };
    const ok = await cli(['run', SUB, '--mode', 'public', '--wait', '30'], env);
    expect(ok.code, ok.stderr).toBe(0);
    expect(ok.stdout).toContain('succeeded');
    polls = 0;
    final = 'failed';
    const failed = await cli(['run', SUB, '--mode', 'public', '--wait', '30'], env);
    expect(failed.code).toBe(1);
    expect(failed.stdout).toContain('incorrect_output');
    final = 'never';
    const timeout = await cli(['run', SUB, '--mode', 'public', '--wait', '0.3'], env);
    expect(timeout.code).toBe(6);
    expect(timeout.stdout).toContain('dryft result');
  });

  it('run --wait and result --wait say why a queued run waits, with its estimate, and suggest a refunded cancel', async () => {
    let polls = 0;
    const waiting = (suggestCancel: boolean) => ({
      reason:
        'No online agent can run deep-recurrence: it needs an NVIDIA H100 or H200; the agents online have: cpu.',
      capableAgents: 0,
      capableSlots: 0,
      busySlots: 0,
      position: 1,
      etaSeconds: null,
      etaIsGuess: true,
      lastCapableSeenAt: null,
      suggestCancel,
    });
    const busy = {
      ...waiting(false),
      reason: 'All 1 slot that can run toy-decode is busy (local). It is next in line.',
      capableAgents: 1,
      capableSlots: 1,
      busySlots: 1,
      etaSeconds: 95,
    };
    const stub = await stubServer((req, res) => {
      if (req.path === `/api/submissions/${SUB}`) return json(res, 200, submissionView());
      if (req.path === '/api/benchmarks/toy-decode') return json(res, 200, benchmarkView());
      if (req.method === 'POST') return json(res, 201, createdBody());
      if (req.path.endsWith('/result'))
        return json(
          res,
          200,
          resultBody(runView({ status: 'succeeded', queuePosition: null }), { score: 100 }),
        );
      polls += 1;
      if (polls <= 2)
        return json(res, 200, runView({ status: 'queued', queuePosition: 1, waiting: waiting(polls === 2) }));
      if (polls <= 4) return json(res, 200, runView({ status: 'queued', queuePosition: 1, waiting: busy }));
      return json(res, 200, runView({ status: 'succeeded', queuePosition: null, score: 100 }));
    });
    closers.push(stub.close);
    const env = { DRYFT_TOKEN: TOKEN, DRYFT_API_URL: stub.url };
    const r = await cli(['run', SUB, '--mode', 'public', '--wait', '30'], env);
    expect(r.code, r.stderr).toBe(0);
    const said = r.stdout + r.stderr;
    expect(said).toContain(
      'waiting: No online agent can run deep-recurrence: it needs an NVIDIA H100 or H200; the agents online have: cpu.',
    );
    expect(said).toMatch(/dryft cancel \S+ --reason "no agent"` is refunded/);
    expect(said).toContain(
      'waiting: All 1 slot that can run toy-decode is busy (local). It is next in line.',
    );
    expect(said.match(/waiting: No online agent/g)).toHaveLength(1);
    polls = 0;
    const res = await cli(['result', 'run-1', '--wait', '--timeout', '30'], env);
    expect(res.code, res.stderr).toBe(0);
    expect(res.stdout + res.stderr).toContain('waiting: No online agent can run deep-recurrence');
  });
});

describe('version', () => {
  it('matches apps/cli/package.json', async () => {
    const pkg = JSON.parse(readFileSync(path.join(__dirname, '..', 'package.json'), 'utf8'));
    expect((await cli(['--version'])).stdout.trim()).toBe(pkg.version);
  });
});

describe("the hub's rate limits", () => {
  const limited = (res: import('node:http').ServerResponse, seconds: number) => {
    res.setHeader('Retry-After', String(seconds));
    json(res, 429, {
      error: {
        code: 'rate_limited',
        message: `Too many runs started (at most 30 a minute). Try again in ${seconds} s.`,
        details: { limit: 'runs', retryAfterSeconds: seconds },
      },
    });
  };

  it('waits Retry-After, says so, and sends the request again', async () => {
    const times: number[] = [];
    const stub = await stubServer((req, res) => {
      if (req.path === `/api/submissions/${SUB}`) return json(res, 200, submissionView());
      if (req.path === '/api/benchmarks/toy-decode') return json(res, 200, benchmarkView());
      if (req.path === `/api/submissions/${SUB}/runs`) {
        times.push(Date.now());
        return times.length === 1 ? limited(res, 1) : json(res, 201, createdBody());
      }
      json(res, 404, { error: { code: 'not_found', message: req.path } });
    });
    closers.push(stub.close);
    const r = await cli(['run', SUB, '--mode', 'public'], { DRYFT_TOKEN: TOKEN, DRYFT_API_URL: stub.url });
    expect(r.code, r.stderr).toBe(0);
    expect(times).toHaveLength(2);
    expect(times[1] - times[0]).toBeGreaterThanOrEqual(950);
    expect(r.stderr).toContain('The hub is rate limiting this request (Too many runs started');
    expect(r.stderr).toContain('retrying in 1 s (Retry-After, retry 1 of at most 3)');
    expect(r.stdout).toContain(`Started public run ${runView().id}`);
  });

  it('refused after every retry (3): stops, saying when to run the command again', async () => {
    let posts = 0;
    const stub = await stubServer((req, res) => {
      if (req.path === `/api/submissions/${SUB}`) return json(res, 200, submissionView());
      if (req.path === '/api/benchmarks/toy-decode') return json(res, 200, benchmarkView());
      if (req.path === `/api/submissions/${SUB}/runs`) return (posts++, limited(res, 1));
      json(res, 404, { error: { code: 'not_found', message: req.path } });
    });
    closers.push(stub.close);
    const r = await cli(['run', SUB, '--mode', 'public'], { DRYFT_TOKEN: TOKEN, DRYFT_API_URL: stub.url });
    expect(r.code).toBe(2);
    expect(posts).toBe(4);
    expect(r.stderr).toContain('retry 3 of at most 3');
    expect(r.stderr).toMatch(/Rate limited by the hub: Too many runs started/);
    expect(r.stderr).toMatch(
      /Run the command again after \d\d:\d\d:\d\d UTC \(in 1 s\); the CLI already waited and retried 3 times\./,
    );
  });

  it('the waits add up to at most DRYFT_MAX_RATE_LIMIT_WAIT: with 2 s, two waits of 1 s, then it stops', async () => {
    let posts = 0;
    const stub = await stubServer((req, res) => {
      if (req.path === `/api/submissions/${SUB}`) return json(res, 200, submissionView());
      if (req.path === '/api/benchmarks/toy-decode') return json(res, 200, benchmarkView());
      if (req.path === `/api/submissions/${SUB}/runs`) return (posts++, limited(res, 1));
      json(res, 404, { error: { code: 'not_found', message: req.path } });
    });
    closers.push(stub.close);
    const r = await cli(['run', SUB, '--mode', 'public'], {
      DRYFT_TOKEN: TOKEN,
      DRYFT_API_URL: stub.url,
      DRYFT_MAX_RATE_LIMIT_WAIT: '2',
    });
    expect(r.code).toBe(2);
    expect(posts).toBe(3);
    expect(r.stderr).toContain('retry 2 of at most 3');
    expect(r.stderr).not.toContain('retry 3 of');
    expect(r.stderr).toMatch(/the CLI already waited and retried 2 times\./);
  });

  it('a wait longer than DRYFT_MAX_RATE_LIMIT_WAIT is not sat out: one request, and when to retry', async () => {
    let posts = 0;
    const stub = await stubServer((req, res) => {
      if (req.path === `/api/submissions/${SUB}`) return json(res, 200, submissionView());
      if (req.path === '/api/benchmarks/toy-decode') return json(res, 200, benchmarkView());
      if (req.path === `/api/submissions/${SUB}/runs`) return (posts++, limited(res, 3600));
      json(res, 404, { error: { code: 'not_found', message: req.path } });
    });
    closers.push(stub.close);
    const started = Date.now();
    const r = await cli(['--json', 'run', SUB, '--mode', 'public'], {
      DRYFT_TOKEN: TOKEN,
      DRYFT_API_URL: stub.url,
    });
    expect(Date.now() - started).toBeLessThan(3_000);
    expect(posts).toBe(1);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/Run the command again after \d\d:\d\d:\d\d UTC \(in 3600 s\)\./);
    expect(JSON.parse(r.stdout).error).toMatchObject({
      code: 'rate_limited',
      details: { retryAfterSeconds: 3600 },
    });
  });

  it('a 429 that is not a rate limit (a spent daily run limit) is not retried', async () => {
    let posts = 0;
    const stub = await stubServer((req, res) => {
      if (req.path === `/api/submissions/${SUB}`) return json(res, 200, submissionView());
      if (req.path === '/api/benchmarks/toy-decode') return json(res, 200, benchmarkView());
      if (req.path === `/api/submissions/${SUB}/runs`) {
        posts++;
        return json(res, 429, {
          error: { code: 'run_limit_reached', message: 'No public runs left today.' },
        });
      }
      json(res, 404, { error: { code: 'not_found', message: req.path } });
    });
    closers.push(stub.close);
    const r = await cli(['run', SUB, '--mode', 'public'], { DRYFT_TOKEN: TOKEN, DRYFT_API_URL: stub.url });
    expect(r.code).toBe(2);
    expect(posts).toBe(1);
    expect(r.stderr).toContain('No public runs left today.');
    expect(r.stderr).not.toContain('rate limiting');
  });
});
