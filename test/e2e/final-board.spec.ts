import { mkdirSync } from 'node:fs';
import * as path from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FinalBoardAdminView } from '@dryft/libs';
import { toyStarter } from '../support/archives';
import {
  BrowserProfiles,
  recordPageErrors,
  requireBuiltWebApp,
  SCREENSHOTS,
  signInThroughForm,
} from '../support/browser';
import { startTestHub, type TestHub } from '../support/hub';
import { hasChromium } from '../support/prerequisites';
import { TestAgent } from '../support/test-agent';
import { ownerWithTeam, signIn, type TestUser } from '../support/users';

/**
 * Issue 33 items 1 and 2 in Chromium, on the built web app served by the real API on real Postgres;
 * results are landed by the in-process TestAgent with chosen scores. An organizer re-runs one run
 * from the console (replaying its prompts), then starts the verified final board of toy-decode
 * (k=2, m=3, from its definition) over three teams, reads the draft with its flag and publishes it;
 * a spectator's leaderboard then shows the final board, with the live one a tab away, and the
 * team page says which board its place is on.
 */
const ORGANIZER = 'fiona-org';
const NONCE = 'cd'.repeat(16);

describe.skipIf(!hasChromium())('re-runs and the verified final board end to end', () => {
  let hub: TestHub;
  let agent: TestAgent;
  let org: TestUser;
  const profiles = new BrowserProfiles('dryft-e2e-final-');
  const pageErrors: string[] = [];
  const runs: Record<string, string> = {};
  const slugs: Record<string, string> = {};

  async function browser(label: string): Promise<Page> {
    const page = await profiles.openPage(label, { baseURL: hub.baseUrl });
    recordPageErrors(page, label, pageErrors);
    return page;
  }

  const shot = (page: Page, name: string) =>
    page.screenshot({ path: path.join(SCREENSHOTS, `${name}.png`), fullPage: true });

  /** Claim and succeed with `score` ± 3 (official: with a stored prompt nonce). */
  const land = async (runId: string, score: number) => {
    await agent.claim(runId);
    await agent.log(runId, 'loading engine', 'measuring');
    await agent.finish(runId, {
      status: 'succeeded',
      score,
      interval: { low: score - 3, high: score + 3, halfWidth: 3, level: 0.95 },
      pairs: 6,
      promptNonce: NONCE,
      workloads: [],
      message: 'All checks passed.',
    });
  };

  beforeAll(async () => {
    requireBuiltWebApp();
    mkdirSync(SCREENSHOTS, { recursive: true });
    hub = await startTestHub({ env: { ADMIN_LOGINS: ORGANIZER } });
    agent = new TestAgent(hub);
    org = await signIn(hub, ORGANIZER);
    for (const [key, name, score] of [
      ['ann', 'Fast Decoders', 130],
      ['bob', 'Steady Kernels', 120],
      ['cat', 'Third Place', 110],
    ] as const) {
      const { owner, team } = await ownerWithTeam(hub, `${key}-final`, name);
      slugs[key] = team.slug;
      const up = await owner.upload(
        '/api/submissions',
        { benchmark: 'toy-decode' },
        { name: `${key}.tar.gz`, content: await toyStarter() },
      );
      const run = (
        await owner.post(`/api/submissions/${up.body.submission.id}/runs`, {
          mode: 'official',
          confirm: true,
        })
      ).body.run;
      await land(run.id, score);
      runs[key] = run.id;
    }
  });

  afterAll(async () => {
    await profiles.closeAll();
    await hub?.close();
  });

  it(
    're-runs a run, then verifies, reviews and publishes the final board; spectators see which board',
    { timeout: 240_000 },
    async () => {
      const page = await browser('organizer');
      await signInThroughForm(page, ORGANIZER);

      // Re-run Ann's best run from the console, replaying its hidden prompts for an audit.
      await page.goto('/admin/runs');
      const row = page.locator(`[data-run="${runs.ann}"]`);
      await row.waitFor();
      await row.getByTestId('admin-run-rerun').click();
      await page.locator('#rr-reason').fill('Audit the leading result on its own prompts');
      await page.getByTestId('rerun-replay').check();
      await shot(page, 'final-board-01-rerun-dialog');
      await page.getByTestId('rerun-submit').click();
      await page.getByTestId('rerun-done').waitFor();
      const rerunId = (await page.getByTestId('rerun-done').locator('a').getAttribute('href'))!
        .split('/')
        .pop()!;
      const [spec] = await hub.dataSource.query('SELECT spec, rerun_of FROM runs WHERE id = $1', [rerunId]);
      expect(spec.rerun_of).toBe(runs.ann);
      expect(spec.spec.promptNonce).toBe(NONCE);
      await page.locator(`[data-run="${rerunId}"]`).getByTestId('admin-run-rerun-of').waitFor();
      await land(rerunId, 129);
      await page.goto(`/runs/${rerunId}`);
      await page.getByTestId('run-rerun-of').waitFor();
      expect(await page.getByTestId('run-rerun-of').textContent()).toContain(runs.ann.slice(0, 8));
      await shot(page, 'final-board-02-rerun-page');

      // Start the final board of toy-decode (k=2, m=3 from its definition).
      await page.goto('/admin');
      const card = page.getByTestId('admin-benchmark').filter({ hasText: 'toy-decode' });
      const reruns = card.getByTestId('reruns-admin');
      await reruns.getByTestId('final-start').click();
      await page.getByTestId('reruns-dialog').getByTestId('reruns-reason').fill('Round 1 closed');
      await page.getByTestId('reruns-dialog').getByTestId('reruns-submit').click();
      await reruns.getByTestId('final-board-admin').waitFor();
      await expect.poll(() => reruns.getByTestId('final-progress').textContent()).toContain('0 of 6 done');
      expect(await reruns.getByTestId('final-publish').isDisabled()).toBe(true);

      // The agents finish the six re-runs: Ann's best (130 ± 3) does not reproduce (median 119).
      const draft = (await org.get('/api/admin/benchmarks/toy-decode/final-board'))
        .body as FinalBoardAdminView;
      const of = (source: string) =>
        draft.batch.pairs.filter((p) => p.sourceRunId === source).map((p) => p.rerunId);
      const scores: [string, number[]][] = [
        [runs.ann, [118, 121, 119]],
        [runs.bob, [122, 121, 120]],
      ];
      for (const [source, s] of scores) for (const [i, id] of of(source).entries()) await land(id, s[i]);
      await expect
        .poll(() => reruns.getByTestId('final-progress').textContent(), { timeout: 15_000 })
        .toContain('6 of 6 done');
      const draftRows = reruns.getByTestId('final-draft-row');
      expect(await draftRows.allTextContents()).toEqual([
        expect.stringContaining('Steady Kernels'),
        expect.stringContaining('Fast Decoders'),
        expect.stringContaining('Third Place'),
      ]);
      expect(await reruns.getByTestId('final-flag').textContent()).toContain('Fast Decoders');
      expect(await reruns.getByTestId('final-flag').textContent()).toContain('119.00');
      await card.scrollIntoViewIfNeeded();
      await shot(page, 'final-board-03-draft');

      // The live board is unchanged until published.
      const spectator = await browser('spectator');
      await spectator.goto('/leaderboard/toy-decode');
      await expect
        .poll(() => spectator.getByTestId('lb-row').first().getAttribute('data-holder'))
        .toContain(slugs.ann);
      expect(await spectator.getByTestId('board-tabs').count()).toBe(0);

      await reruns.getByTestId('final-publish').click();
      await page.getByTestId('reruns-dialog').getByTestId('reruns-reason').fill('Every place verified');
      await page.getByTestId('reruns-dialog').getByTestId('reruns-submit').click();
      await reruns.getByTestId('reruns-message').waitFor();
      expect(await reruns.getByTestId('final-board-admin').textContent()).toContain(`published`);
      await shot(page, 'final-board-04-published-console');

      // The spectator's open page offers the final board (live), shown by default once published.
      await spectator.getByTestId('board-tabs').waitFor({ timeout: 15_000 });
      await expect.poll(() => spectator.getByTestId('board-label').textContent()).toContain('final board');
      await expect
        .poll(() => spectator.getByTestId('lb-row').first().getAttribute('data-holder'))
        .toContain(slugs.bob);
      expect(await spectator.getByTestId('lb-verified').count()).toBe(2);
      expect(await spectator.getByTestId('lb-unverified').count()).toBe(1);
      await shot(spectator, 'final-board-05-spectator-final');
      await spectator.getByTestId('board-tab-live').click();
      await expect.poll(() => spectator.getByTestId('board-label').textContent()).toContain('live board');
      expect(await spectator.getByTestId('lb-row').first().getAttribute('data-holder')).toContain(slugs.ann);
      await shot(spectator, 'final-board-06-spectator-live');

      // The team page says which board its place is on.
      await spectator.goto(`/teams/${slugs.ann}`);
      await spectator.getByTestId('team-final-place').waitFor();
      expect(await spectator.getByTestId('team-final-place').textContent()).toBe('#2');
      expect(await spectator.getByTestId('team-live-place').textContent()).toContain('live board #1');
      await shot(spectator, 'final-board-07-team-page');

      expect(pageErrors).toEqual([]);
    },
  );
});
