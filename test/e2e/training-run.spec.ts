import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { parse, stringify } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BrowserProfiles, CHROMIUM_ARGS_NO_EXTRA_TRAFFIC, recordPageErrors } from '../support/browser';
import { AGENT_MAIN, startQuickstart, type Quickstart } from '../support/quickstart';
import { ROOT } from '../support/hub';
import { available, pythonWithTorch } from '../support/prerequisites';
import { existsSync } from 'node:fs';

/**
 * The single-file product end to end, on CPU: a `submission.py` uploaded through the hub for the
 * easy tier with a dataset runs on the real local agent (bubblewrap, the real training evaluator on
 * Debian's torch), and its accuracy appears in the result and on the run page. The definition is
 * deep-recurrence's own with CPU hardware and an 8-second easy tier: what changes is only where and
 * how long it trains.
 */
const python = pythonWithTorch();
/** One Chromium per test at most; each test closes what it opened. */
const profiles = new BrowserProfiles('dryft-e2e-training-', CHROMIUM_ARGS_NO_EXTRA_TRAFFIC);

describe.skipIf(
  !existsSync(AGENT_MAIN) ||
    !available('a Python with torch', python !== null, 'apt-get install python3-torch'),
)('deep-recurrence through the hub on a CPU agent', () => {
  let hub: Quickstart;
  let benchmarksDir: string;

  beforeAll(async () => {
    benchmarksDir = mkdtempSync(path.join(tmpdir(), 'dryft-benchmarks-'));
    cpSync(path.join(ROOT, 'config/benchmarks'), benchmarksDir, { recursive: true });
    const file = path.join(benchmarksDir, 'deep-recurrence.yaml');
    const def = parse(readFileSync(file, 'utf8'));
    def.hardware = { accelerator: 'cpu', gpuModels: [] };
    def.tiers = def.tiers.map((t: { id: string }) =>
      t.id === 'easy' ? { ...t, trainingSeconds: 8, evalSeconds: 60 } : t,
    );
    def.datasets = def.datasets.map((d: { id: string; task: Record<string, unknown> }) =>
      d.id === 'square' ? { ...d, task: { ...d.task, modulus: 97, evalExamples: 512 } } : d,
    );
    writeFileSync(file, stringify(def));
    hub = await startQuickstart({
      env: {
        BENCHMARKS_DIR: benchmarksDir,
        HARNESS_PYTHON: python!,
      },
    });
  });
  afterAll(async () => {
    await hub?.close();
    rmSync(benchmarksDir, { recursive: true, force: true });
  });

  it('uploads submission.py, runs the easy tier on a dataset, and shows the accuracy on the run page', async () => {
    const signIn = await fetch(`${hub.url}/api/auth/dev`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ login: 'trainer' }),
    });
    const cookies = signIn.headers.getSetCookie().map((c) => c.split(';')[0]);
    const { csrfToken } = await signIn.json();
    const headers = { cookie: cookies.join('; '), 'x-csrf-token': csrfToken };
    const team = await fetch(`${hub.url}/api/teams`, {
      method: 'POST',
      headers: { ...headers, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'Trainers' }),
    });
    expect(team.status).toBe(201);

    const form = new FormData();
    form.set('benchmark', 'deep-recurrence');
    form.set(
      'file',
      new Blob([readFileSync(path.join(ROOT, 'starters/deep-recurrence/submission.py'))]),
      'submission.py',
    );
    const up = await fetch(`${hub.url}/api/submissions`, { method: 'POST', headers, body: form });
    expect(up.status).toBe(201);
    const { submission } = await up.json();
    const created = await fetch(`${hub.url}/api/submissions/${submission.id}/runs`, {
      method: 'POST',
      headers: { ...headers, 'content-type': 'application/json', 'idempotency-key': `train-${Date.now()}` },
      body: JSON.stringify({ mode: 'public', tier: 'easy', dataset: 'square' }),
    });
    expect(created.status).toBe(201);
    const { run, quota } = await created.json();
    expect(quota).toMatchObject({ bucket: 'easy', limit: 60, used: 1, remaining: 59 });

    let view;
    for (const end = Date.now() + 150_000; Date.now() < end;) {
      view = await (await fetch(`${hub.url}/api/runs/${run.id}`, { headers })).json();
      if (['succeeded', 'failed', 'canceled'].includes(view.status)) break;
      await new Promise((r) => setTimeout(r, 500));
    }
    const result = await (await fetch(`${hub.url}/api/runs/${run.id}/result`, { headers })).json();
    expect(view.status, JSON.stringify(result).slice(0, 2000)).toBe('succeeded');
    // An accuracy (how far above chance 6 s of a loaded CPU gets is the harness tests' business),
    // with the steps, updates and tokens seen, and a loss curve.
    expect(result.score).toBeGreaterThanOrEqual(0);
    expect(result.score).toBeLessThanOrEqual(100);
    expect(result.metrics).toMatchObject({ accuracy: result.score });
    expect(result.metrics.updates).toBeGreaterThan(0);
    expect(result.metrics.tokensSeen).toBeGreaterThan(0);
    expect(result.curve?.length ?? 0).toBeGreaterThan(0);

    try {
      const page = await profiles.openPage('run', { baseURL: hub.url, cookie: headers.cookie });
      const errors: string[] = [];
      recordPageErrors(page, 'run', errors);
      await page.goto(`${hub.url}/runs/${run.id}`);
      const score = page.getByTestId('run-score');
      await expect
        .poll(async () => (await score.textContent())?.trim(), { timeout: 20_000 })
        .toBe(`${result.score.toFixed(2)}%`);
      // The stored loss curve and the run's log come back on a later visit too.
      await page.getByTestId('chart-metric-loss').waitFor({ timeout: 20_000 });
      if (view.lastLogSeq > 0) await page.getByText(`${view.lastLogSeq} lines`).waitFor({ timeout: 20_000 });
      await page.screenshot({
        path: path.join(ROOT, 'test/e2e/screenshots/training-run.png'),
        fullPage: true,
      });
      expect(errors).toEqual([]);
    } finally {
      await profiles.closeAll();
    }
  });
});

/** Signs a user in on a quick-start hub and gives them a team; returns its cookie and CSRF headers. */
async function participant(url: string, login: string) {
  const signIn = await fetch(`${url}/api/auth/dev`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ login }),
  });
  const cookies = signIn.headers.getSetCookie().map((c) => c.split(';')[0]);
  const { csrfToken } = await signIn.json();
  const headers = { cookie: cookies.join('; '), 'x-csrf-token': csrfToken };
  const team = await fetch(`${url}/api/teams`, {
    method: 'POST',
    headers: { ...headers, 'content-type': 'application/json' },
    body: JSON.stringify({ name: `${login} team` }),
  });
  expect(team.status).toBe(201);
  return { headers };
}

async function startPracticeRun(url: string, headers: Record<string, string>) {
  const form = new FormData();
  form.set('benchmark', 'recurrence-cpu');
  form.set(
    'file',
    new Blob([readFileSync(path.join(ROOT, 'starters/recurrence-cpu/submission.py'))]),
    'submission.py',
  );
  const up = await fetch(`${url}/api/submissions`, { method: 'POST', headers, body: form });
  expect(up.status).toBe(201);
  const { submission } = await up.json();
  const created = await fetch(`${url}/api/submissions/${submission.id}/runs`, {
    method: 'POST',
    headers: { ...headers, 'content-type': 'application/json' },
    body: JSON.stringify({ mode: 'public', tier: 'practice', dataset: 'square' }),
  });
  expect(created.status).toBe(201);
  return (await created.json()).run as { id: string };
}

/**
 * The CPU practice benchmark exactly as `npm start` serves it (config/benchmarks as checked in, no
 * changes): the local agent trains the sample submission.py, its loss curve streams to the run page
 * while it runs, and the accuracy lands well above chance.
 */
describe.skipIf(
  !existsSync(AGENT_MAIN) ||
    !available('a Python with torch', python !== null, 'apt-get install python3-torch'),
)('recurrence-cpu, the quick start’s training benchmark, through the browser', () => {
  let hub: Quickstart;
  beforeAll(async () => {
    hub = await startQuickstart({ env: { HARNESS_PYTHON: python! } });
  });
  afterAll(async () => hub?.close());

  it('trains the sample on the local agent, streams the loss curve live, and scores well above chance', async () => {
    const { headers } = await participant(hub.url, 'practiser');
    const run = await startPracticeRun(hub.url, headers);
    try {
      const page = await profiles.openPage('practice', { baseURL: hub.url, cookie: headers.cookie });
      const errors: string[] = [];
      recordPageErrors(page, 'practice', errors);
      await page.goto(`${hub.url}/runs/${run.id}`);
      // The loss curve appears while the run is still running: it streams.
      await page.getByTestId('chart-metric-loss').waitFor({ timeout: 120_000 });
      const statusWhenCurveShown = await (await fetch(`${hub.url}/api/runs/${run.id}`, { headers })).json();
      expect(['running', 'succeeded']).toContain(statusWhenCurveShown.status);
      const score = page.getByTestId('run-score');
      await expect
        .poll(async () => (await score.textContent())?.trim(), { timeout: 180_000, interval: 1000 })
        .toMatch(/^\d+\.\d\d%$/);
      const result = await (await fetch(`${hub.url}/api/runs/${run.id}/result`, { headers })).json();
      expect(result.run.status, JSON.stringify(result).slice(0, 2000)).toBe('succeeded');
      expect(result.run.agentName).toBe('local');
      // Chance is 1/29 ≈ 3.4 %: the sample must be well above it.
      expect(result.metrics.chanceAccuracy).toBeCloseTo(100 / 29, 1);
      expect(result.score).toBeGreaterThan(3 * result.metrics.chanceAccuracy);
      expect((await score.textContent())?.trim()).toBe(`${result.score.toFixed(2)}%`);
      expect(result.curve.filter((p: { name: string }) => p.name === 'loss').length).toBeGreaterThan(2);
      // Never ranked: the practice benchmark's board stays empty, and deep-recurrence's is its own.
      const board = await (await fetch(`${hub.url}/api/leaderboards/recurrence-cpu`)).json();
      expect(board.entries ?? []).toEqual([]);
      await page.screenshot({
        path: path.join(ROOT, 'test/e2e/screenshots/training-practice-run.png'),
        fullPage: true,
      });
      expect(errors).toEqual([]);
    } finally {
      await profiles.closeAll();
    }
  }, 300_000);
});

/**
 * The quick start promises Node, npm and python3, not torch. A local agent whose Python cannot
 * import torch takes no training run, and the waiting run says what to install.
 */
describe.skipIf(!existsSync(AGENT_MAIN))('recurrence-cpu on a local agent without torch', () => {
  let hub: Quickstart;
  let dir: string;
  beforeAll(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'dryft-notorch-'));
    // The system python3 without site-packages: the standard library only, no torch.
    const noTorch = path.join(dir, 'python3-without-torch');
    writeFileSync(noTorch, '#!/bin/sh\nexec /usr/bin/python3 -S "$@"\n', { mode: 0o755 });
    // The definition as checked in, with a short noCapableAgentHintSeconds so the hint to cancel shows.
    const benchmarks = path.join(dir, 'benchmarks');
    cpSync(path.join(ROOT, 'config/benchmarks'), benchmarks, { recursive: true });
    const file = path.join(benchmarks, 'recurrence-cpu.yaml');
    writeFileSync(file, stringify({ ...parse(readFileSync(file, 'utf8')), noCapableAgentHintSeconds: 3 }));
    hub = await startQuickstart({
      env: { HARNESS_PYTHON: noTorch, ADMIN_LOGINS: 'no-torch', BENCHMARKS_DIR: benchmarks },
    });
  });
  afterAll(async () => {
    await hub?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('keeps the run queued and says: apt-get install python3-torch, or set HARNESS_PYTHON', async () => {
    const { headers } = await participant(hub.url, 'no-torch');
    const run = await startPracticeRun(hub.url, headers);
    let view: { status: string; waiting: { reason: string } | null } | undefined;
    for (const end = Date.now() + 60_000; Date.now() < end;) {
      view = await (await fetch(`${hub.url}/api/runs/${run.id}`, { headers })).json();
      if (view!.waiting?.reason.includes('cannot import torch')) break;
      await new Promise((r) => setTimeout(r, 500));
    }
    expect(view!.status).toBe('queued');
    expect(view!.waiting!.reason).toContain('No online agent can run recurrence-cpu: it needs a CPU agent');
    expect(view!.waiting!.reason).toContain('Agent local has the hardware but cannot run it');
    expect(view!.waiting!.reason).toContain('apt-get install python3-torch');
    expect(view!.waiting!.reason).toContain('HARNESS_PYTHON');
    try {
      // Playwright's own default viewport, which the committed screenshot has.
      const page = await profiles.openPage('no-torch', {
        baseURL: hub.url,
        viewport: { width: 1280, height: 720 },
        cookie: headers.cookie,
      });
      await page.goto(`${hub.url}/runs/${run.id}`);
      const waiting = page.getByTestId('run-waiting');
      await waiting.waitFor({ timeout: 20_000 });
      expect(await waiting.textContent()).toContain('apt-get install python3-torch');
      expect(await waiting.textContent()).toContain('No start estimate until such an agent is online.');
      // The organizer's agents page: one run waiting for recurrence-cpu, no capacity, and why.
      await page.goto(`${hub.url}/admin/agents`);
      const row = page.getByTestId('queue-table').locator('tr', { hasText: 'recurrence-cpu' });
      await row.waitFor({ timeout: 20_000 });
      const text = (await row.textContent()) ?? '';
      expect(text).toContain('0 of 0');
      expect(text).toContain('apt-get install python3-torch');
      await page.screenshot({
        path: path.join(ROOT, 'test/e2e/screenshots/queue-no-torch.png'),
        fullPage: true,
      });

      // No capable agent for longer than the definition's hint: the page suggests cancelling, and a
      // cancel before the start is refunded; the page and the quota say so.
      await page.goto(`${hub.url}/runs/${run.id}`);
      const hint = page.getByTestId('run-suggest-cancel');
      await hint.waitFor({ timeout: 30_000 });
      expect(await hint.textContent()).toContain('a run canceled before it starts is refunded');
      await hint.getByRole('button', { name: 'Cancel run' }).click();
      await page.getByTestId('cancel-reason').fill('no torch on this machine');
      await page.getByTestId('confirm-cancel').click();
      const refunded = page.getByTestId('run-refunded');
      await refunded.waitFor({ timeout: 20_000 });
      expect(await refunded.textContent()).toContain('does not count against your daily limit');
      const quota = await (await fetch(`${hub.url}/api/quota?benchmark=recurrence-cpu`, { headers })).json();
      expect(quota).toEqual([
        expect.objectContaining({ bucket: 'practice', used: 0, refunded: 1, remaining: 200 }),
      ]);
    } finally {
      await profiles.closeAll();
    }
  }, 120_000);
});
