import { existsSync, mkdtempSync, promises as fs, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateToken } from '@dryft/libs/node';
import { AGENT_MAIN, freePort, startQuickstart, type Quickstart } from '../support/quickstart';
import { ROOT, runCli, spawnCli, TcpProxy, teamToken } from '../support/cli';

/**
 * The `dryft` CLI as a real child process against a real API process on real Postgres (and the
 * local agent running toy-decode, when apps/gpu-agent is built).
 */
let hub: Quickstart;
let token: string;
let teamName: string;
let env: Record<string, string>;
let work: string;
const ENGINE = path.join(ROOT, 'starters/toy-decode/engine');

beforeAll(async () => {
  hub = await startQuickstart();
  ({ token, teamName } = await teamToken(hub.url, 'cli-e2e'));
  work = mkdtempSync(path.join(tmpdir(), 'dryft-cli-e2e-'));
  env = {
    DRYFT_API_URL: hub.url,
    DRYFT_TOKEN: token,
    XDG_CONFIG_HOME: path.join(work, 'config'),
    DRYFT_POLL_MS: '250',
  };
});

afterAll(async () => {
  await hub?.close();
  if (work) await fs.rm(work, { recursive: true, force: true });
});

const api = async (p: string, init: RequestInit = {}) => {
  const res = await fetch(`${hub.url}${p}`, {
    ...init,
    headers: {
      authorization: `Bearer ${token}`,
      'content-type': 'application/json',
      ...(init.headers ?? {}),
    },
  });
  return { status: res.status, body: (await res.json()) as any };
};

describe('doctor and login', () => {
  it('doctor: API reachable, token valid, which team, versions (exit 0)', async () => {
    const r = await runCli(['doctor'], env);
    expect(r.code, r.stdout + r.stderr).toBe(0);
    expect(r.stdout).toContain('api reachable');
    expect(r.stdout).toContain(`acts for cli-e2e`);
    expect(r.stdout).toContain(teamName);
    expect(r.stdout).toMatch(/dryft 0\.1\.0, Node 20/);
    expect(r.stdout).toContain('toy-decode');
    expect(r.stdout + r.stderr).not.toContain(token);
    const j = await runCli(['doctor', '--json'], env);
    expect(JSON.parse(j.stdout).ok).toBe(true);
  });

  it('a refused token: exit 3 and the troubleshooting advice, never the token', async () => {
    // well-formed and of this hub (its tag: the first characters of the body), but no team ever created it
    const unknown = generateToken('pat', token.slice('dryft_pat_'.length, 'dryft_pat_'.length + 4));
    const r = await runCli(['runs'], { ...env, DRYFT_TOKEN: unknown });
    expect(r.code).toBe(3);
    expect(r.stderr).toContain('DRYFT_TOKEN is set in the same terminal');
    expect(r.stderr).toContain('revoked or expired');
    expect(r.stderr).toContain('dryft doctor');
    expect(r.stdout + r.stderr).not.toContain(unknown);
    const d = await runCli(['doctor'], { ...env, DRYFT_TOKEN: unknown });
    expect(d.code).toBe(3);
    expect(d.stdout).toMatch(/FAIL token valid/);
    // a token made by another hub is said to be that, with the hub this CLI talked to
    const foreign = await runCli(['runs'], { ...env, DRYFT_TOKEN: generateToken('pat', 'ZZZZ') });
    expect(foreign.code).toBe(3);
    expect(foreign.stderr).toContain('This token belongs to another hub (it starts dryft_pat_ZZZZ…');
    expect(foreign.stderr).toContain(`This command talked to ${hub.url}`);
  });

  it('no token: exit 3 with how to get one', async () => {
    const r = await runCli(['submissions'], { ...env, DRYFT_TOKEN: undefined as unknown as string });
    expect(r.code).toBe(3);
    expect(r.stderr).toContain('dryft login');
  });

  it('API down: exit 4 with what to check', async () => {
    const port = await freePort();
    const r = await runCli(['runs'], {
      ...env,
      DRYFT_API_URL: `http://127.0.0.1:${port}`,
      DRYFT_RETRY_BASE_MS: '10',
    });
    expect(r.code).toBe(4);
    expect(r.stderr).toContain('Cannot reach the Dryft API');
    expect(r.stderr).toContain('DRYFT_API_URL');
    const d = await runCli(['doctor'], {
      ...env,
      DRYFT_API_URL: `http://127.0.0.1:${port}`,
      DRYFT_RETRY_BASE_MS: '10',
    });
    expect(d.code).toBe(4);
  });

  it('login stores the token (0600) in $XDG_CONFIG_HOME; DRYFT_TOKEN overrides it', async () => {
    const config = path.join(work, 'login-config');
    const noEnv = { DRYFT_API_URL: hub.url, XDG_CONFIG_HOME: config };
    const r = await runCli(['login', '--token-stdin'], noEnv, { stdin: `${token}\n` });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain('acts for cli-e2e');
    const file = path.join(config, 'dryft', 'config.json');
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(JSON.parse(readFileSync(file, 'utf8')).token).toBe(token);
    expect(r.stdout + r.stderr).not.toContain(token);
    expect((await runCli(['submissions'], noEnv)).code).toBe(0);
    const overridden = await runCli(['submissions'], { ...noEnv, DRYFT_TOKEN: generateToken('pat') });
    expect(overridden.code).toBe(3);
    const refused = await runCli(['login', '--token-stdin'], noEnv, { stdin: 'dryft_pat_short\n' });
    expect(refused.code).toBe(3);
    expect(JSON.parse(readFileSync(file, 'utf8')).token).toBe(token);
  });
});

describe('validate, package, submit', () => {
  it('validate and package the toy starter engine; package is byte-identical across runs', async () => {
    expect((await runCli(['validate', ENGINE], env)).code).toBe(0);
    const a = path.join(work, 'a.tar.gz');
    const b = path.join(work, 'b.tar.gz');
    expect((await runCli(['package', ENGINE, '--output', a], env)).code).toBe(0);
    expect((await runCli(['package', ENGINE, '--output', b], env)).code).toBe(0);
    expect(readFileSync(a).equals(readFileSync(b))).toBe(true);
    expect((await runCli(['validate', a], env)).code).toBe(0);
  });

  it('a submission that fails validation: exit 2, rule by rule, nothing uploaded', async () => {
    const bad = path.join(work, 'bad-engine');
    await fs.mkdir(bad, { recursive: true });
    writeFileSync(path.join(bad, 'engine.py'), readFileSync(path.join(ENGINE, 'engine.py')));
    writeFileSync(path.join(bad, 'weights.bin'), Buffer.from([0, 1, 2, 255]));
    const before = (await api('/api/submissions')).body.items.length;
    const r = await runCli(['submit', bad, '--benchmark', 'toy-decode'], env);
    expect(r.code).toBe(2);
    expect(r.stdout).toMatch(/FAIL {2}extensions/);
    expect(r.stdout).toContain('weights.bin');
    expect((await api('/api/submissions')).body.items.length).toBe(before);
    // An archive the CLI made by hand with a containing folder is refused by the same rules.
    const v = await runCli(['validate', path.join(ROOT, 'starters/toy-decode')], env);
    expect(v.code).toBe(2);
    expect(v.stdout).toMatch(/FAIL {2}entrypoint/);
  });

  it('submit uploads a folder and prints only the submission id on stdout; submissions lists it', async () => {
    const r = await runCli(['submit', ENGINE, '--benchmark', 'toy-decode'], env);
    expect(r.code, r.stderr).toBe(0);
    const id = r.stdout.trim();
    expect(id).toMatch(/^[0-9a-f-]{36}$/);
    const sub = await api(`/api/submissions/${id}`);
    expect(sub.status).toBe(200);
    expect(sub.body.benchmarkId).toBe('toy-decode');
    expect(sub.body.files.map((f: { path: string }) => f.path)).toEqual(['engine.py']);
    const list = await runCli(['submissions'], env);
    expect(list.code).toBe(0);
    expect(list.stdout).toContain(id);
    const j = JSON.parse((await runCli(['--json', 'submissions', '--benchmark', 'toy-decode'], env)).stdout);
    expect(j.items.some((s: { id: string }) => s.id === id)).toBe(true);
  });

  it('run with an unknown submission id: exit 2 and where to find the id', async () => {
    const r = await runCli(['run', '00000000-0000-4000-8000-000000000000', '--mode', 'public'], env);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('Submission ID');
  });
});

describe('runs without waiting: run, runs, logs, result, rank, cancel', () => {
  let submissionId: string;
  beforeAll(async () => {
    // The toy starter finishes in about 2 s, faster than a cancel can land; this copy spends 8 s in
    // its (untimed) load, so a cancel always finds the run in progress.
    const slow = mkdtempSync(path.join(tmpdir(), 'dryft-slow-engine-'));
    const source = readFileSync(path.join(ENGINE, 'engine.py'), 'utf8');
    writeFileSync(
      path.join(slow, 'engine.py'),
      `${source}\n\nimport time as _time\n_Starter = Engine\n\n\nclass Engine(_Starter):\n    def __init__(self, model_path):\n        _time.sleep(8)\n        super().__init__(model_path)\n`,
    );
    submissionId = (await runCli(['submit', slow, '--benchmark', 'toy-decode'], env)).stdout.trim();
  });

  it('an official run needs --yes without a terminal; with it, one run starts', async () => {
    const refused = await runCli(['run', submissionId, '--mode', 'official'], env);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain('--yes');
    const runs = await api(`/api/runs?submission=${submissionId}`);
    expect(runs.body.items).toHaveLength(0);
  });

  it('a lost answer to run creation is retried with the same Idempotency-Key: exactly one run', async () => {
    const proxy = new TcpProxy(hub.port);
    await proxy.start();
    try {
      proxy.dropNextResponse(/^POST \/api\/submissions\/[^ ]+\/runs /);
      const r = await runCli(['--json', 'run', submissionId, '--mode', 'public'], {
        ...env,
        DRYFT_API_URL: proxy.url,
        DRYFT_RETRY_BASE_MS: '100',
      });
      expect(r.code, r.stderr).toBe(0);
      expect(proxy.dropped).toBe(1);
      expect(r.stderr).toContain('same Idempotency-Key');
      const created = JSON.parse(r.stdout);
      const runs = await api(`/api/runs?submission=${submissionId}`);
      expect(runs.body.items.map((x: { id: string }) => x.id)).toEqual([created.run.id]);
      // Cancel it so it does not hold the agent for the next tests.
      const c = await runCli(['cancel', created.run.id, '--reason', 'idempotency test'], env);
      expect(c.code, c.stderr).toBe(0);
    } finally {
      await proxy.close();
    }
  });

  it('cancel needs --reason; a canceled run makes result and logs --follow exit 1', async () => {
    const started = JSON.parse(
      (await runCli(['--json', 'run', submissionId, '--mode', 'public'], env)).stdout,
    );
    const runId = started.run.id as string;
    const usage = await runCli(['cancel', runId], env);
    expect(usage.code).toBe(2);
    const c = await runCli(['cancel', runId, '--reason', 'superseded'], env);
    expect(c.code, c.stderr).toBe(0);
    const runs = await runCli(['runs'], env);
    expect(runs.stdout).toContain(runId);
    // With an agent the run may already be running: cancel asks it to stop, so wait for the end.
    const res = await runCli(['result', runId, '--wait', '--timeout', '60'], env, { timeoutMs: 70_000 });
    expect(res.code, res.stdout + res.stderr).toBe(1);
    expect(res.stdout).toContain('canceled');
    expect(res.stdout).toContain('superseded');
    const follow = await runCli(['logs', runId, '--follow'], env, { timeoutMs: 30_000 });
    expect(follow.code).toBe(1);
    const rank = await runCli(['rank', runId], env);
    expect(rank.code).toBe(0);
    expect(rank.stdout).toContain('Not ranked');
  });
});

describe.skipIf(!existsSync(AGENT_MAIN))('with the local agent running toy-decode', () => {
  let submissionId: string;
  beforeAll(async () => {
    submissionId = (await runCli(['submit', ENGINE, '--benchmark', 'toy-decode'], env)).stdout.trim();
  });

  it('run --wait: a public run succeeds (exit 0); result, logs and rank read it', async () => {
    const r = await runCli(['run', submissionId, '--mode', 'public', '--wait', '240'], env, {
      timeoutMs: 260_000,
    });
    expect(r.code, r.stdout + r.stderr + hub.agent?.output()).toBe(0);
    const runId = /Run ([0-9a-f-]{36})/.exec(r.stdout)![1];
    expect(r.stdout).toContain('succeeded');
    const result = await runCli(['result', runId], env);
    expect(result.code).toBe(0);
    expect(result.stdout).toContain('WORKLOAD');
    const logs = await runCli(['logs', runId], env);
    expect(logs.code).toBe(0);
    const rest = await api(`/api/runs/${runId}/logs?after=0&limit=5000`);
    expect(logs.stdout.trim().split('\n').length).toBe(rest.body.items.length);
    const rank = await runCli(['--json', 'rank', runId], env);
    expect(JSON.parse(rank.stdout).eligible).toBe(false); // public runs never rank
  }, 280_000);

  it('official run with --yes, result --wait: scores, and rank places it', async () => {
    const r = await runCli(['--json', 'run', submissionId, '--mode', 'official', '--yes'], env);
    expect(r.code, r.stderr).toBe(0);
    const runId = JSON.parse(r.stdout).run.id as string;
    const res = await runCli(['result', runId, '--wait', '--timeout', '240'], env, { timeoutMs: 260_000 });
    expect(res.code, res.stdout + res.stderr).toBe(0);
    // paired with the baseline: the score comes with its 95 % interval and the pairs it took
    expect(res.stdout).toMatch(
      /Score: [\d.]+ ± [\d.]+ \(95 % interval [\d.]+–[\d.]+, \d+ pairs\) \(official\)/,
    );
    const rank = await runCli(['rank', runId], env);
    expect(rank.stdout).toMatch(/Rank 1 of 1/);
    expect(rank.stdout).toMatch(/score [\d.]+ ± [\d.]+ \(95 % interval/);
  }, 280_000);

  it('logs --follow of a toy-decode run survives a network cut: the same lines as the stored log, once each', async () => {
    const started = JSON.parse(
      (await runCli(['--json', 'run', submissionId, '--mode', 'public'], env)).stdout,
    );
    const runId = started.run.id as string;
    const proxy = new TcpProxy(hub.port);
    await proxy.start();
    const follow = spawnCli(
      ['--json', 'logs', runId, '--follow'],
      { ...env, DRYFT_API_URL: proxy.url },
      { timeoutMs: 200_000 },
    );
    const end = Date.now() + 120_000;
    while (!follow.stdout().includes('"seq"') && Date.now() < end)
      await new Promise((r) => setTimeout(r, 20));
    await proxy.cut();
    await new Promise((r) => setTimeout(r, 1000));
    await proxy.restore();
    const done = await follow.done;
    await proxy.close();
    expect(done.code, done.stderr).toBe(0);
    const printed = done.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l))
      .filter((l) => typeof l.seq === 'number');
    const stored = await api(`/api/runs/${runId}/logs?after=0&limit=5000`);
    expect(stored.body.complete).toBe(true);
    expect(printed.map((l) => l.seq)).toEqual(stored.body.items.map((l: { seq: number }) => l.seq));
    expect(printed.map((l) => l.text)).toEqual(stored.body.items.map((l: { text: string }) => l.text));
  }, 240_000);
});
