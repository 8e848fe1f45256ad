import { mkdirSync } from 'node:fs';
import * as path from 'node:path';
import type { BrowserContext } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { toyStarter } from '../support/archives';
import { BrowserProfiles, requireBuiltWebApp, SCREENSHOTS, signInThroughForm } from '../support/browser';
import { startTestHub, type TestHub } from '../support/hub';
import { hasChromium } from '../support/prerequisites';
import { TestAgent } from '../support/test-agent';
import { ownerWithTeam, type TestUser } from '../support/users';

/**
 * Issue 33, "compare runs", in Chromium on the built web: a participant ticks two of the team's
 * runs of one benchmark on Runs and reads them side by side; a run of another benchmark cannot be
 * ticked with them. Results are landed by the in-process TestAgent (the subject is the page).
 */
describe.skipIf(!hasChromium())('comparing runs in the browser', () => {
  let hub: TestHub;
  const profiles = new BrowserProfiles('dryft-e2e-compare-');
  let ctx: BrowserContext;
  const errors: string[] = [];
  const runs: string[] = [];

  beforeAll(async () => {
    requireBuiltWebApp();
    mkdirSync(SCREENSHOTS, { recursive: true });
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
    ctx = await profiles.open('participant', { baseURL: hub.baseUrl });
  });
  afterAll(async () => {
    await profiles.closeAll();
    await hub?.close();
  });

  it(
    'ticks two runs on Runs and shows them side by side, the better figure marked',
    { timeout: 120_000 },
    async () => {
      const page = await ctx.newPage();
      page.on('pageerror', (e) => errors.push(e.message));
      await signInThroughForm(page, 'cmp-e2e');
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
      await page.screenshot({ path: path.join(SCREENSHOTS, 'compare-01-two-runs.png'), fullPage: true });

      // a refusal says what to change
      await page.goto(`/runs/compare?ids=${runs[0]}`);
      await page.getByText('Name at least 2 runs to compare').waitFor();
      expect(errors).toEqual([]);
    },
  );
});
