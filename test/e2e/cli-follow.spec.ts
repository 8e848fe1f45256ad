import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startQuickstart, type Quickstart } from '../support/quickstart';
import { ROOT, runCli, spawnCli, TcpProxy, teamToken } from '../support/cli';
import { FakeAgent } from '../support/fake-agent';

/**
 * `dryft logs --follow` through a TCP proxy that the test cuts and restores in the middle of a
 * run: every line is printed exactly once, in order, and the command exits with the run's outcome.
 * The agent is the scripted one (real /agents protocol, a steady stream of 80 lines that holds after
 * line 40 until the cut), so the cut lands in the middle of the stream every time.
 */
let hub: Quickstart;
let agent: FakeAgent;
let token: string;
const ENGINE = path.join(ROOT, 'starters/toy-decode/engine');

beforeAll(async () => {
  hub = await startQuickstart({ agent: false });
  const agentToken = readFileSync(path.join(hub.dataDir, 'local-agent.token'), 'utf8').trim();
  agent = await FakeAgent.streaming(hub.url, agentToken, {
    lines: 80,
    intervalMs: 60,
    holdAfterLine: 40, // released once the connection is cut: the cut lands mid-run on a busy box too
  });
  ({ token } = await teamToken(hub.url, 'cli-follow'));
});

afterAll(async () => {
  agent?.close();
  await hub?.close();
});

const waitFor = async (cond: () => boolean, ms: number, what: string) => {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
};

describe('logs --follow across a network drop', () => {
  it('prints every line once and in order after the connection is cut and restored', async () => {
    const env = {
      DRYFT_API_URL: hub.url,
      DRYFT_TOKEN: token,
      DRYFT_POLL_MS: '300',
      XDG_CONFIG_HOME: '/nonexistent',
    };
    const submissionId = (await runCli(['submit', ENGINE, '--benchmark', 'toy-decode'], env)).stdout.trim();
    const started = JSON.parse(
      (await runCli(['--json', 'run', submissionId, '--mode', 'public'], env)).stdout,
    );
    const runId = started.run.id as string;

    const proxy = new TcpProxy(hub.port);
    await proxy.start();
    const follow = spawnCli(
      ['logs', runId, '--follow'],
      { ...env, DRYFT_API_URL: proxy.url },
      { timeoutMs: 60_000 },
    );
    const count = () =>
      follow
        .stdout()
        .split('\n')
        .filter((l) => l.startsWith('[out] scripted line')).length;
    await waitFor(() => count() >= 10, 20_000, 'the first lines');
    await proxy.cut();
    agent.release();
    await new Promise((r) => setTimeout(r, 1500)); // lines keep coming on the hub meanwhile
    expect(count()).toBeLessThanOrEqual(40); // the cut really landed mid-run
    await proxy.restore();
    const done = await follow.done;
    expect(proxy.cuts).toBe(1);
    await proxy.close();

    expect(done.code, done.stderr).toBe(0);
    const printed = done.stdout
      .split('\n')
      .filter((l) => l.startsWith('[out] scripted line'))
      .map((l) => l.slice('[out] '.length));
    expect(printed).toEqual(Array.from({ length: 80 }, (_, i) => `scripted line ${i + 1}`));
    expect(done.stderr).toContain('Live connection lost');
    expect(done.stderr).toMatch(/succeeded/);
    expect(proxy.connections).toBeGreaterThan(1); // it came back through the proxy

    // --json: one JSON line per log line, then the run; the same lines as the REST pages.
    const j = await runCli(['--json', 'logs', runId], env);
    const lines = j.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(lines.map((l) => l.seq)).toEqual(Array.from({ length: 80 }, (_, i) => i + 1));
  }, 90_000);

  it('falls back to REST paging when the live socket cannot connect at all', async () => {
    const env = {
      DRYFT_API_URL: hub.url,
      DRYFT_TOKEN: token,
      DRYFT_POLL_MS: '200',
      XDG_CONFIG_HOME: '/nonexistent',
    };
    const submissionId = (await runCli(['submit', ENGINE, '--benchmark', 'toy-decode'], env)).stdout.trim();
    const runId = JSON.parse((await runCli(['--json', 'run', submissionId, '--mode', 'public'], env)).stdout)
      .run.id as string;
    // A proxy that only lets plain HTTP through: WebSocket upgrades are cut at once.
    const proxy = new TcpProxy(hub.port);
    await proxy.start();
    proxy.refuseUpgrades = true;
    const r = await runCli(
      ['logs', runId, '--follow'],
      { ...env, DRYFT_API_URL: proxy.url },
      { timeoutMs: 60_000 },
    );
    await proxy.close();
    expect(r.code, r.stderr).toBe(0);
    const printed = r.stdout
      .split('\n')
      .filter((l) => l.startsWith('[out] scripted line'))
      .map((l) => l.slice('[out] '.length));
    expect(printed).toEqual(Array.from({ length: 80 }, (_, i) => `scripted line ${i + 1}`));
  }, 90_000);
});

describe('waiting on a run the agent finishes', () => {
  it('run --wait exits 0 when it succeeds and 1 when it fails; result --wait reads the verdict', async () => {
    const env = {
      DRYFT_API_URL: hub.url,
      DRYFT_TOKEN: token,
      DRYFT_POLL_MS: '200',
      XDG_CONFIG_HOME: '/nonexistent',
    };
    const submissionId = (await runCli(['submit', ENGINE, '--benchmark', 'toy-decode'], env)).stdout.trim();
    agent.result = { status: 'succeeded', failureCode: null, message: 'All checks passed.', score: null };
    const ok = await runCli(['run', submissionId, '--mode', 'public', '--wait', '60'], env, {
      timeoutMs: 70_000,
    });
    expect(ok.code, ok.stderr).toBe(0);
    expect(ok.stdout).toMatch(/Run [0-9a-f-]{36}: succeeded/);
    agent.result = {
      status: 'failed',
      failureCode: 'incorrect_output',
      message: 'token 3 of sequence 0 differs',
      score: null,
    };
    const bad = await runCli(['--json', 'run', submissionId, '--mode', 'public'], env);
    const runId = JSON.parse(bad.stdout).run.id as string;
    const res = await runCli(['result', runId, '--wait', '--timeout', '60'], env, { timeoutMs: 70_000 });
    expect(res.code, res.stderr).toBe(1);
    expect(res.stdout).toContain('incorrect_output');
    expect(res.stdout).toContain('token 3 of sequence 0 differs');
    const short = await runCli(['run', submissionId, '--mode', 'public', '--wait', '0.5'], env);
    expect(short.code).toBe(6);
  }, 120_000);
});
