import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import type { BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  BrowserProfiles,
  CHROMIUM_ARGS_NO_EXTRA_TRAFFIC,
  recordPageErrors,
  requireBuiltWebApp,
  SCREENSHOTS,
} from '../support/browser';
import { ROOT, startTestHub, type TestHub } from '../support/hub';
import { HarnessStandin } from '../support/hub-process';
import { AGENT_MAIN, startQuickstart, waitForLocalAgentOnline, type Quickstart } from '../support/quickstart';
import { signIn } from '../support/users';
import { hasChromium } from '../support/prerequisites';
import { TestAgent } from '../support/test-agent';
import { toyStarter } from '../support/archives';

/**
 * The web client end to end: the built app served by the real API on real Postgres, the local
 * agent running the toy-decode harness (test/support/quickstart.ts: `node apps/api/dist/main.js`
 * plus `node apps/gpu-agent/dist/main.js --local`; until the agent is built, the in-process hub with
 * HarnessStandin running the same real harness), and Debian's Chromium driven by playwright-core. One
 * participant signs in, creates a team, uploads the toy-decode starter and follows a public run
 * live; a signed-out spectator in a second browser watches the leaderboard change when an official
 * run (started after its confirmation dialog) lands. Any console error fails the test.
 */
let baseUrl = '';
let runnerOutput: () => string = () => '';
const profiles = new BrowserProfiles('dryft-e2e-', CHROMIUM_ARGS_NO_EXTRA_TRAFFIC);
/** Folders that are not a browser's profile (benchmark definitions). */
const dirs: string[] = [];
const consoleErrors: string[] = [];
const ADMIN = 'ada-e2e';

async function browserContext(label: string, cookie?: string): Promise<BrowserContext> {
  const ctx = await profiles.open(label, {
    baseURL: baseUrl,
    acceptDownloads: true,
    cookie,
  });
  // Every page the profile opens (a new context has none yet), popups too.
  ctx.on('page', (p) => watch(p, label));
  return ctx;
}

function watch(page: Page, label: string): void {
  // Chromium itself logs every failed fetch: any error fails the test (GET /api/github/status
  // answers 200 on every hub, with `configured: false` where the GitHub App is not set up).
  recordPageErrors(page, label, consoleErrors);
}

async function shot(page: Page, name: string): Promise<void> {
  await page.screenshot({ path: path.join(SCREENSHOTS, `${name}.png`), fullPage: true });
}

describe.skipIf(!hasChromium())('web client end to end', () => {
  let quickstart: Quickstart | undefined;
  let hub: TestHub | undefined;
  let standin: HarnessStandin | undefined;
  const useAgent = existsSync(AGENT_MAIN) && process.env.DRYFT_TEST_STANDIN !== '1';

  beforeAll(async () => {
    requireBuiltWebApp();
    mkdirSync(SCREENSHOTS, { recursive: true });
    // toy-decode as configured, but with the timing-stability limit opened wide: the subject here is
    // the web, and a shared CPU box's timing noise must not decide whether the official run ranks.
    const defs = mkdtempSync(path.join(tmpdir(), 'dryft-e2e-defs-'));
    dirs.push(defs);
    const toy = readFileSync(path.join(ROOT, 'config/benchmarks/toy-decode.yaml'), 'utf8');
    expect(toy).toMatch(/maxRatioSpreadPct: \d+/);
    writeFileSync(
      path.join(defs, 'toy-decode.yaml'),
      toy.replace(/maxRatioSpreadPct: \d+/, 'maxRatioSpreadPct: 100000'),
    );
    const env = { ADMIN_LOGINS: ADMIN, BENCHMARKS_DIR: defs };
    if (useAgent) {
      quickstart = await startQuickstart({ env });
      baseUrl = quickstart.url;
      runnerOutput = () => `${quickstart!.api.output()}\n${quickstart!.agent?.output() ?? ''}`;
      await waitForLocalAgentOnline(baseUrl, ADMIN).catch((err: Error) => {
        throw new Error(`${err.message}:\n${runnerOutput()}`, { cause: err });
      });
    } else {
      console.warn(
        '[e2e web] apps/gpu-agent is not built: runs go through HarnessStandin (the real harness, in process)',
      );
      hub = await startTestHub({ env });
      standin = new HarnessStandin(hub);
      standin.start();
      baseUrl = hub.baseUrl;
      runnerOutput = () => standin!.output;
    }
  });

  afterAll(async () => {
    await profiles.closeAll();
    await standin?.stop();
    await hub?.close();
    await quickstart?.close();
    for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
  });

  it(
    'signs in, uploads the starter, follows runs live and moves the public leaderboard',
    { timeout: 240_000 },
    async () => {
      const ctx = await browserContext('participant');
      const page = await ctx.newPage();
      try {
        await journey(page, useAgent);
      } catch (err) {
        for (const [i, c] of profiles.contexts.entries())
          for (const p of c.pages()) await shot(p, `failure-${i}`).catch(() => undefined);
        throw new Error(
          `${(err as Error).message}\nconsole errors: ${JSON.stringify(consoleErrors)}\nrunner output (tail): ${runnerOutput().slice(-3000)}`,
          { cause: err },
        );
      }
    },
  );
});

async function journey(page: Page, useAgent: boolean): Promise<void> {
  const t0 = Date.now();

  // Signed out: the benchmarks page and the sign-in page.
  await page.goto('/');
  await page.getByTestId('benchmark-card').first().waitFor();
  await shot(page, '01-benchmarks-signed-out');
  await page.getByRole('link', { name: 'Sign in to compete' }).click();
  await page.getByTestId('dev-login').fill('ada-e2e');
  await shot(page, '02-sign-in');
  await page.getByRole('button', { name: 'Sign in', exact: true }).click();
  await page.getByTestId('account-menu').waitFor();
  await page.waitForURL((u) => !u.pathname.startsWith('/signin'));

  // Team: create one; the invite code is shown to the owner.
  await page.getByRole('link', { name: 'Team', exact: true }).click();
  await page.getByTestId('create-team-name').fill('Fast Decoders');
  await page.getByRole('button', { name: 'Create team' }).click();
  await expect.poll(() => page.getByTestId('team-name').textContent()).toBe('Fast Decoders');
  await expect.poll(async () => (await page.getByTestId('invite-code').textContent())?.trim().length).toBe(6);
  await shot(page, '03-team');

  // Submissions: download the starter archive and upload it unchanged.
  await page.getByRole('link', { name: 'Submissions' }).click();
  await page.getByTestId('starter-download').waitFor();
  // The picker shows when the hub offers more than one benchmark.
  if (await page.getByTestId('benchmark-select').count())
    await page.getByTestId('benchmark-select').selectOption('toy-decode');
  const [download] = await Promise.all([
    page.waitForEvent('download'),
    page.getByTestId('starter-download').click(),
  ]);
  const starter = path.join(profiles.folders[profiles.folders.length - 1], download.suggestedFilename());
  await download.saveAs(starter);
  expect(readFileSync(starter).subarray(0, 2)).toEqual(Buffer.from([0x1f, 0x8b]));
  await page.getByTestId('file-input').setInputFiles(starter);
  await page.getByText('all rules pass').first().waitFor();
  expect(await page.locator('[aria-label="Checked on your computer"] [data-passed="false"]').count()).toBe(0);
  await page.getByTestId('upload').click();
  await page.getByTestId('upload-done').waitFor();
  await page.locator('[aria-label="Checked by the hub"]').waitFor();
  const name = (await page.getByTestId('upload-done').locator('strong').textContent())!;
  expect(name).toMatch(/#1$/);
  await shot(page, '04-submissions-uploaded');

  // The submission: details with its ID, then a public run.
  await page.getByRole('link', { name: 'Open it to start a run' }).click();
  const submissionId = (await page.getByTestId('submission-id').textContent())!.trim();
  expect(submissionId).toMatch(/^[0-9a-f-]{36}$/);
  await shot(page, '05-submission');
  await page.getByTestId('start-public').click();
  await page.waitForURL(/\/runs\/[0-9a-f-]{36}$/);
  const publicRunId = page.url().split('/').pop()!;

  // Live: log lines and chart points arrive on the open page, without a reload.
  await expect
    .poll(async () => Number((await page.getByTestId('log-count').textContent())!.replace(/[^0-9]/g, '')), {
      timeout: 60_000,
    })
    .toBeGreaterThan(0);
  await expect
    .poll(async () => Number(await page.getByTestId('chart-ttft').getAttribute('data-points')), {
      timeout: 60_000,
    })
    .toBeGreaterThan(0);
  await expect
    .poll(async () => (await page.getByTestId('run-status').textContent())!.trim(), { timeout: 90_000 })
    .toMatch(/^(succeeded|failed)/);
  expect((await page.getByTestId('run-status').textContent())!.trim()).toBe('succeeded');
  await page.getByTestId('samples-table').waitFor();
  expect(await page.getByTestId('run-id').textContent()).toBe(publicRunId);
  await shot(page, '06-run-public');

  // Log search filters lines.
  await page.getByTestId('log-search').fill('engine');
  await page.waitForTimeout(300);
  await shot(page, '07-run-log-search');
  await page.getByTestId('log-search').fill('');

  // A reload catches up: the same number of lines, each once.
  const before = await page.getByTestId('log-count').textContent();
  await page.reload();
  await expect.poll(() => page.getByTestId('log-count').textContent(), { timeout: 20_000 }).toBe(before);

  // Spectator: a second, signed-out browser on the leaderboard.
  const spectatorCtx = await browserContext('spectator');
  const spectator = spectatorCtx.pages()[0] ?? (await spectatorCtx.newPage());
  await spectator.goto('/leaderboard/toy-decode');
  await spectator.getByText('No official results yet').waitFor();
  await expect.poll(() => spectator.getByTestId('live-indicator').textContent()).toContain('live');
  await shot(spectator, '08-leaderboard-empty');

  // Official run, after its confirmation dialog; the spectator's board is watched from now on.
  const firstRow = spectator.getByTestId('lb-row').first();
  const moved = firstRow
    .waitFor({ timeout: 150_000 })
    .then(() => firstRow.getAttribute('data-moved'))
    .catch((err: Error) => `no row: ${err.message}`);
  await page.getByTestId('start-official').click();
  await page.getByTestId('official-dialog').getByText('Official runs count').waitFor();
  await shot(page, '09-official-confirm');
  await page.getByTestId('confirm-official').click();
  await page.waitForURL((u) => u.pathname.startsWith('/runs/') && !u.pathname.endsWith(publicRunId));
  await expect
    .poll(async () => (await page.getByTestId('run-status').textContent())!.trim(), { timeout: 120_000 })
    .toMatch(/^(succeeded|failed)/);
  expect((await page.getByTestId('run-status').textContent())!.trim()).toBe('succeeded');
  await expect
    .poll(async () => (await page.getByTestId('run-rank').textContent()) ?? '', { timeout: 20_000 })
    .toContain('#1');
  // An official score is shown with the half-width of its 95 % interval and the pairs behind it.
  // (± its half-width, or +up −down where the interval is not symmetric around the score)
  expect(await page.getByTestId('run-score-halfwidth').textContent()).toMatch(/± \d|\+\d+\.\d −\d/);
  expect(await page.getByTestId('run-score-interval').textContent()).toMatch(/95 % interval .* pairs/);
  await shot(page, '10-run-official');

  // The spectator's board changed live: a new row, marked, linking to the team page.
  expect(await moved).toBe('new');
  const row = firstRow;
  expect(await row.getByRole('link').textContent()).toBe('Fast Decoders');
  await shot(spectator, '11-leaderboard-live');
  await row.getByRole('link').click();
  await spectator.getByTestId('public-team-name').waitFor();
  await expect
    .poll(async () => Number(await spectator.getByTestId('chart-best').getAttribute('data-points')))
    .toBeGreaterThan(0);
  await shot(spectator, '12-team-public');

  // The other main pages.
  await page.goto('/runs');
  await page.getByRole('cell', { name: name }).first().waitFor();
  await shot(page, '13-runs');
  await page.goto('/tokens');
  await page.getByTestId('token-name').fill('laptop CLI');
  await page.getByRole('button', { name: 'Create token' }).click();
  await expect
    .poll(async () => (await page.getByTestId('token-value').textContent()) ?? '')
    .toMatch(/^dryft_pat_/);
  await shot(page, '14-tokens');
  await page.goto('/repositories');
  await page.getByRole('heading', { name: 'Repositories' }).waitFor();
  // No GitHub App on this hub: the page says so and points to the archive upload.
  await page.getByTestId('repos-unavailable').getByText('GitHub App not configured on this hub').waitFor();
  await page.waitForLoadState('networkidle');
  await shot(page, '15-repositories');
  await page.goto('/admin');
  await page.getByTestId('admin-benchmark').first().waitFor();
  await shot(page, '16-admin-benchmarks');
  await page.goto('/admin/agents');
  if (useAgent) await page.getByTestId('agents-table').getByText('local', { exact: true }).waitFor();
  else await page.getByText('No agents yet').waitFor();
  // Organizers see what each team stores (logs, capped per run, and artifacts).
  await page.getByTestId('storage-table').getByRole('link', { name: 'Fast Decoders' }).waitFor();
  await expect
    .poll(() => page.getByTestId('storage-total').textContent())
    .toMatch(/All teams: .+ of logs \([\d,]+ lines\) and .+ of artifacts\./);
  await shot(page, '17-admin-agents');
  await page.getByTestId('account-menu').click();
  await shot(page, '18-account-menu');
  await page.keyboard.press('Escape');

  // Phone width.
  await page.setViewportSize({ width: 390, height: 844 });
  await page.goto(`/runs/${publicRunId}`);
  await page.getByTestId('samples-table').waitFor();
  await shot(page, '19-run-phone');
  await spectator.setViewportSize({ width: 390, height: 844 });
  await spectator.goto('/leaderboard/toy-decode');
  await spectator.getByTestId('lb-row').first().waitFor();
  await shot(spectator, '20-leaderboard-phone');

  expect(consoleErrors).toEqual([]);
  console.log(`[e2e web] done in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
}

/**
 * The run page's log with 100,000 lines: the real API stores them (through the same lifecycle the
 * /agents gateway uses, fed by TestAgent) and the page loads them, renders only the rows in view,
 * searches them, and keeps following new lines live.
 */
describe.skipIf(!hasChromium())('web run log at 100,000 lines', () => {
  let hub: TestHub;

  beforeAll(async () => {
    requireBuiltWebApp();
    mkdirSync(SCREENSHOTS, { recursive: true });
    hub = await startTestHub();
    baseUrl = hub.baseUrl;
  });

  afterAll(async () => {
    await profiles.closeAll();
    await hub?.close();
  });

  it('loads, virtualizes, searches and follows a 100,000-line log', { timeout: 180_000 }, async () => {
    const user = await signIn(hub, 'lena-e2e');
    expect((await user.post('/api/teams', { name: 'Long Logs' })).status).toBe(201);
    const up = await user.upload(
      '/api/submissions',
      { benchmark: 'toy-decode' },
      { name: 'submission.tar.gz', content: await toyStarter() },
    );
    expect(up.status).toBe(201);
    const created = await user
      .post(`/api/submissions/${up.body.submission.id}/runs`, { mode: 'public' })
      .set('Idempotency-Key', `e2e-${Date.now()}`);
    expect(created.status).toBe(201);
    const runId: string = created.body.run.id;
    const agent = new TestAgent(hub, 'log-writer');
    await agent.claim(runId);
    const t0 = Date.now();
    for (let start = 1; start <= 100_000; start += 5000) {
      const texts = Array.from({ length: 5000 }, (_, i) => {
        const n = start + i;
        return n % 10 === 0
          ? `\x1b[33mstep ${n}\x1b[0m loss=${(1 / n).toFixed(6)}`
          : `line ${n} ${'x'.repeat(n % 60)}`;
      });
      await agent.log(runId, ...texts);
    }
    console.log(`[e2e web] stored 100,000 lines in ${((Date.now() - t0) / 1000).toFixed(1)} s`);

    const ctx = await browserContext('long-log', user.cookie);
    const page = await ctx.newPage();
    const t1 = Date.now();
    await page.goto(`/runs/${runId}`);
    await expect
      .poll(() => page.getByTestId('log-count').textContent(), { timeout: 60_000 })
      .toContain('100,000 lines');
    const loadSeconds = (Date.now() - t1) / 1000;
    // Only the rows in view (plus overscan) are in the DOM.
    const rendered = await page.locator('[data-testid="log-lines"] [data-seq]').count();
    expect(rendered).toBeLessThan(200);
    expect(await page.locator('[data-testid="log-lines"] [data-seq]').last().getAttribute('data-seq')).toBe(
      '100000',
    );

    // Scrolling to the middle renders that part at once.
    const scrollMs = await page.evaluate(async () => {
      const el = document.querySelector('[data-testid="log-lines"]') as HTMLElement;
      const started = performance.now();
      for (let i = 1; i <= 20; i++) {
        el.scrollTop = (el.scrollHeight * i) / 40;
        el.dispatchEvent(new Event('scroll'));
        await new Promise((r) => requestAnimationFrame(() => r(null)));
      }
      return (performance.now() - started) / 20;
    });
    const middle = Number(
      await page.locator('[data-testid="log-lines"] [data-seq]').first().getAttribute('data-seq'),
    );
    expect(middle).toBeGreaterThan(40_000);
    expect(await page.getByTestId('log-follow').textContent()).toContain('Paused');
    await shot(page, '21-run-log-100k');

    await page.getByTestId('log-search').fill('step 99990');
    await expect.poll(() => page.locator('[data-testid="log-lines"] [data-seq]').count()).toBe(1);
    await page.getByTestId('log-search').fill('');
    await expect.poll(() => page.locator('[data-testid="log-lines"] [data-seq]').count()).toBeGreaterThan(1);

    // Back to following; new lines stream in live.
    await page.getByTestId('log-follow').click();
    await agent.log(runId, ...Array.from({ length: 1000 }, (_, i) => `live ${i + 1}`));
    await expect
      .poll(() => page.getByTestId('log-count').textContent(), { timeout: 20_000 })
      .toContain('101,000 lines');
    await expect
      .poll(() => page.locator('[data-testid="log-lines"] [data-seq]').last().getAttribute('data-seq'))
      .toBe('101000');
    await agent.finish(runId, { status: 'succeeded', score: 101, message: 'done' });
    await expect
      .poll(async () => (await page.getByTestId('run-status').textContent())!.trim(), { timeout: 20_000 })
      .toBe('succeeded');
    console.log(
      `[e2e web] 100,000-line log: loaded in ${loadSeconds.toFixed(1)} s, ${rendered} rows in the DOM, ${scrollMs.toFixed(1)} ms per scroll frame`,
    );
    expect(consoleErrors).toEqual([]);
  });
});
