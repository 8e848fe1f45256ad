import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { toyStarter } from '../support/archives';
import { ROOT, startTestHub, type TestHub } from '../support/hub';
import { hasChromium } from '../support/prerequisites';
import { TestAgent } from '../support/test-agent';
import { ownerWithTeam, type TestUser } from '../support/users';

/**
 * Issue 33, "compare runs", in Chromium on the built web: a participant ticks two of the team's
 * runs of one benchmark on Runs and reads them side by side; a run of another benchmark cannot be
 * ticked with them. Results are landed by the in-process TestAgent (the subject is the page).
 */
const SHOTS = path.join(ROOT, 'test/e2e/screenshots');
const WEB_BUILD = path.join(ROOT, 'apps/web/build/200.html');

describe.skipIf(!hasChromium())('comparing runs in the browser', () => {
  let hub: TestHub;
  let ctx: BrowserContext;
  let dir: string;
  const errors: string[] = [];
  const runs: string[] = [];

  beforeAll(async () => {
    if (!existsSync(WEB_BUILD)) throw new Error('apps/web/build is missing: run `npm run build` first.');
    mkdirSync(SHOTS, { recursive: true });
    hub = await startTestHub();
    const agent = new TestAgent(hub);
    const { owner } = await ownerWithTeam(hub, 'cmp-e2e', 'Comparers');
    const start = async (user: TestUser, name: string, score: number) => {
      const up = await user.upload(
        '/api/submissions',
        { benchmark: 'toy-decode' },
        { name, content: await toyStarter() },
      );
      const run = (await user.post(`/api/submissions/${up.body.submission.id}/runs`, { mode: 'public' })).body
        .run;
      await agent.complete(run.id, score);
      runs.push(run.id);
    };
    await start(owner, 'slow.tar.gz', 100);
    await start(owner, 'fast.tar.gz', 250);
    dir = mkdtempSync(path.join(tmpdir(), 'dryft-e2e-compare-'));
    ctx = await chromium.launchPersistentContext(dir, {
      executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium',
      headless: true,
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run'],
      viewport: { width: 1280, height: 860 },
      baseURL: hub.baseUrl,
    });
  });
  afterAll(async () => {
    await ctx?.close().catch(() => undefined);
    await hub?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  async function signIn(page: Page, login: string) {
    await page.goto('/signin');
    await page.getByTestId('dev-login').fill(login);
    await page.getByRole('button', { name: 'Sign in', exact: true }).click();
    await page.getByTestId('account-menu').waitFor();
    await page.waitForURL((u) => !u.pathname.startsWith('/signin'));
  }

  it(
    'ticks two runs on Runs and shows them side by side, the better figure marked',
    { timeout: 120_000 },
    async () => {
      const page = ctx.pages()[0] ?? (await ctx.newPage());
      page.on('pageerror', (e) => errors.push(e.message));
      await signIn(page, 'cmp-e2e');
      await page.goto('/runs');
      const picks = page.getByTestId('compare-pick');
      await picks.first().waitFor();
      expect(await picks.count()).toBe(2);
      await picks.nth(0).check();
      await picks.nth(1).check();
      await page.getByTestId('compare-go').click();
      await page.waitForURL(/\/runs\/compare\?ids=/);
      const table = page.getByTestId('compare-table');
      await table.waitFor();
      // the newest run (fast, 250) is listed first on Runs, so it is run 1 here
      const score = page.getByTestId('compare-row').filter({ hasText: /^score/ });
      expect((await score.locator('td').allTextContents()).map((t) => t.replace(/\s+/g, ' ').trim())).toEqual(
        ['250', '100 -60.0 %'],
      );
      expect(await score.locator('td.best').textContent()).toContain('250');
      const speedup = page.getByTestId('compare-row').filter({ hasText: 'b1-p16 · speed-up' });
      expect(await speedup.locator('td.best').textContent()).toContain('2.5');
      await page.screenshot({ path: path.join(SHOTS, 'compare-01-two-runs.png'), fullPage: true });

      // a refusal says what to change
      await page.goto(`/runs/compare?ids=${runs[0]}`);
      await page.getByText('Name at least 2 runs to compare').waitFor();
      expect(errors).toEqual([]);
    },
  );
});
