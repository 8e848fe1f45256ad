import { mkdirSync, readFileSync } from 'node:fs';
import * as path from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BrowserProfiles, recordPageErrors, requireBuiltWebApp, SCREENSHOTS } from '../support/browser';
import { ROOT, startTestHub, type TestHub } from '../support/hub';
import { hasChromium } from '../support/prerequisites';
import { toyStarter } from '../support/archives';
import { TestAgent } from '../support/test-agent';
import { ownerWithTeam, signIn, type TestUser } from '../support/users';

/**
 * The benchmark pages (`/benchmarks/:id`, issue 31): the decode page ("From engine to leaderboard")
 * and the training page ("Ship the idea, not the pipeline") served by the real API on real Postgres
 * from the built app, walked in Debian's Chromium signed out and signed in, at 1280 px and 390 px;
 * an upload through the training page's own form; an organizer's change of the whole-run limit and
 * a rules bump reaching an open page over /live. Any console error fails the test.
 *
 * Screenshots committed under test/e2e/screenshots/: benchmark-decode-{desktop,390}.png,
 * benchmark-decode-signed-in{,-390}.png, benchmark-training-{desktop,390}.png,
 * benchmark-training-signed-in{,-390}.png.
 */
const ORGANIZER = 'org-pages-e2e';

let hub: TestHub;
const profiles = new BrowserProfiles('dryft-e2e-');
const consoleErrors: string[] = [];

/**
 * A browser signed in as `user` (null: signed out). `scrollbars`: the classic scrollbars a desktop
 * browser draws, which take room from a scrolling box (headless Chromium hides them by default).
 */
async function browserAs(
  user: TestUser | null,
  label: string,
  width = 1280,
  opts: { scrollbars?: boolean } = {},
): Promise<Page> {
  const page = await profiles.openPage(label, {
    baseURL: hub.baseUrl,
    viewport: { width, height: 860 },
    cookie: user?.cookie,
    scrollbars: opts.scrollbars,
  });
  // A team page after its team lost its place is a 404 the test provokes (and the page explains).
  recordPageErrors(
    page,
    label,
    consoleErrors,
    (msg, where) => msg.text().includes('404') && /\/api\/public\/teams\//.test(where),
  );
  return page;
}

const shot = (page: Page, name: string) =>
  page.screenshot({ path: path.join(SCREENSHOTS, `${name}.png`), fullPage: true });
const text = async (page: Page, testid: string) =>
  ((await page.getByTestId(testid).textContent()) ?? '').trim();

/** No element wider than the viewport: nothing is cut or scrolls the page sideways at 390 px. */
async function noSidewaysScroll(page: Page): Promise<void> {
  const { scroll, client, wide } = await page.evaluate(() => {
    const client = document.documentElement.clientWidth;
    const wide = [...document.querySelectorAll('main *')]
      .filter((el) => el.getBoundingClientRect().right > client + 1)
      .slice(0, 3)
      .map((el) => `${el.tagName.toLowerCase()}.${el.className}`);
    return { scroll: document.documentElement.scrollWidth, client, wide };
  });
  expect(scroll, wide.join(', ')).toBeLessThanOrEqual(client);
}

describe.skipIf(!hasChromium())('the benchmark pages in the web', () => {
  let owner: TestUser;
  let organizer: TestUser;

  beforeAll(async () => {
    requireBuiltWebApp();
    mkdirSync(SCREENSHOTS, { recursive: true });
    hub = await startTestHub({ env: { ADMIN_LOGINS: ORGANIZER } });
    ({ owner } = await ownerWithTeam(hub, 'pia-pages-e2e', 'Page Readers'));
    organizer = await signIn(hub, ORGANIZER);
  });

  afterAll(async () => {
    await profiles.closeAll();
    await hub?.close();
  });

  it('signed out: the decode page from the home page, every section in the seed’s order, with the published values', async () => {
    const page = await browserAs(null, 'decode-out');
    await page.goto('/');
    await page
      .getByTestId('benchmark-card')
      .filter({ hasText: 'Qwen3 4B decode' })
      .getByTestId('benchmark-page-link')
      .click();
    await page.waitForURL(/\/benchmarks\/qwen3-4b-decode$/);
    await page.getByTestId('decode-page').waitFor();
    const headings = await page.locator('[data-testid=decode-page] h2').allTextContents();
    expect(headings).toEqual([
      'Your first run',
      'Submit without GitHub',
      'Teams and permissions',
      'What to submit',
      'Checkpoint and runtime',
      'Scoring and correctness',
      'Use the CLI',
      'Run on push',
      'Use the HTTP API',
      'Results and leaderboard',
      'Troubleshooting',
    ]);
    // and the seed's sub-sections, in its order
    expect(await page.locator('[data-testid=decode-page] h3').allTextContents()).toEqual([
      'Every member',
      'Team owners and admins',
      'Public runs',
      'Official runs',
      'Your team’s best',
      'Team pages',
      'My repository is missing',
      'My push did nothing',
      'Submissions or evaluations are closed',
      'The CLI refuses my token',
      'I need help with a failed run',
    ]);
    expect(await text(page, 'fact-sample-budget')).toContain('2 min per generate call');
    expect(await text(page, 'fact-latency')).toBe('TPOT at most 100 ms in every sample');
    expect(await text(page, 'fact-memory')).toContain('40 GB');
    expect(await text(page, 'fact-samples')).toContain('at most 20 pairs per hidden workload');
    expect(await text(page, 'fact-baseline')).toBe(
      '100 = the baseline, measured on the same hardware as your run.',
    );
    expect(await text(page, 'pins')).toContain('revision cdbee75f17c01a7cc42f958dc650907174af0554');
    // the spectator is told what signing in adds; the whole-run limit's value is for signed-in users
    expect(await text(page, 'signed-out-note')).toContain(
      'Sign in to upload, start runs, see the whole-run time limit',
    );
    expect(await text(page, 'run-limit')).toContain('visible when signed in');
    expect(await text(page, 'run-limit')).not.toContain('1 h');
    // this hub's address in the commands; Windows through dryft.cmd
    expect(await text(page, 'code-template')).toContain(
      `${hub.baseUrl}/api/benchmarks/qwen3-4b-decode/template`,
    );
    expect(await text(page, 'code-windows')).toContain('.\\bin\\dryft.cmd doctor');
    // where the hub differs from the seed on purpose, the page says what is true
    const cliSection = (await page.locator('#cli').textContent()) ?? '';
    expect(cliSection).toContain('The CLI is one Node.js script');
    expect(cliSection).toContain('not a native binary');
    expect(cliSection).toContain('the installer writes bin\\dryft.cmd, not a .exe');
    expect(cliSection).toContain('./bin/dryft login saves it once');
    expect(cliSection).not.toContain('dryft.exe');
    expect(await text(page, 'code-http')).toContain(`${hub.baseUrl}/api/submissions`);
    // every code block has its copy button
    const blocks = page.locator('[data-testid=decode-page] .code');
    expect(await blocks.count()).toBeGreaterThanOrEqual(8);
    expect(await page.locator('[data-testid=decode-page] .code button').count()).toBe(await blocks.count());
    await shot(page, 'benchmark-decode-desktop');

    const narrow = await browserAs(null, 'decode-390', 390);
    await narrow.goto('/benchmarks/qwen3-4b-decode');
    await narrow.getByTestId('decode-page').waitFor();
    await noSidewaysScroll(narrow);
    await shot(narrow, 'benchmark-decode-390');

    // linked from the leaderboard too
    await page.goto('/leaderboard/qwen3-4b-decode');
    await page.getByTestId('leaderboard-benchmark-link').click();
    await page.waitForURL(/\/benchmarks\/qwen3-4b-decode$/);
  });

  it('signed out: the training page with its form, rules, sketch and depth examples', async () => {
    const page = await browserAs(null, 'training-out');
    await page.goto('/benchmarks/deep-recurrence');
    await page.getByTestId('training-page').waitFor();
    expect(await page.locator('[data-testid=training-page] h2').allTextContents()).toEqual([
      'Upload submission.py',
      'Rules',
      'Contract sketch',
      'How depth is used',
    ]);
    expect(await page.locator('[data-testid=training-page] h3').allTextContents()).toEqual([
      'So how is depth graded?',
      'Go very deep',
      'Mix shared stages',
      'Adapt the compute',
    ]);
    // the seed's lead-in before the form: the contract, in its order
    expect(await page.locator('#contract strong').allTextContents()).toEqual([
      'Artifact:',
      'Model factory:',
      'Training loss:',
      'Optimizer factory:',
      'Use the whole machine:',
      'Evaluator boundary:',
    ]);
    await expect.poll(() => text(page, 'api-key-hint')).toContain('No key yet? Sign in with GitHub');
    expect(await text(page, 'hard-warning')).toBe(
      'Hard task warning: Hard may change aspects of the recurrence itself; do not assume it is repeated squaring.',
    );
    expect(await text(page, 'daily-limits')).toBe(
      'Daily limits use UTC: Easy 60 · Medium 6 · Hard 1. Accepted failed runs count; rejected uploads do not.',
    );
    expect(await text(page, 'tier-durations')).toBe('Easy 1 min · Medium 10 min · Hard 1 hour');
    expect(await text(page, 'ceiling')).toBe('500,000,000');
    expect(await page.getByTestId('rules').textContent()).toContain(
      'Maximum 500 million trainable parameters.',
    );
    // the form's fields as the seed draws them; no Upload button for a spectator
    await page.getByTestId('form-tier').waitFor();
    await page.getByTestId('form-dataset').waitFor();
    expect(await page.getByText('Choose submission.py').count()).toBe(1);
    expect(await page.getByTestId('form-upload').count()).toBe(0);
    for (const id of ['code-sketch', 'code-deep', 'code-mixed', 'code-adaptive', 'code-training-cli'])
      expect(await page.getByTestId(id).locator('button').count()).toBe(1);
    // Download sample is the sample submission.py
    const sample = await hub.http.get(
      (await page.getByTestId('download-sample').getAttribute('href')) ?? '/missing',
    );
    expect(sample.status).toBe(200);
    expect(sample.text ?? sample.body.toString()).toContain('SUBMISSION');
    await shot(page, 'benchmark-training-desktop');
    const narrow = await browserAs(null, 'training-390', 390);
    await narrow.goto('/benchmarks/deep-recurrence');
    await narrow.getByTestId('training-page').waitFor();
    await noSidewaysScroll(narrow);
    await shot(narrow, 'benchmark-training-390');
  });

  it('signed in: the decode page shows the whole-run limit and a changed limit and a rules bump arrive live', async () => {
    const page = await browserAs(owner, 'decode-in');
    await page.goto('/benchmarks/qwen3-4b-decode');
    await page.getByTestId('decode-page').waitFor();
    expect(await page.getByTestId('signed-out-note').count()).toBe(0);
    await expect.poll(() => text(page, 'run-limit')).toContain('now 1 h.');
    expect(await text(page, 'code-first')).toContain('--wait 3600');
    await shot(page, 'benchmark-decode-signed-in');
    const narrow = await browserAs(owner, 'decode-in-390', 390);
    await narrow.goto('/benchmarks/qwen3-4b-decode');
    await narrow.getByTestId('decode-page').waitFor();
    await expect.poll(() => text(narrow, 'run-limit'), { timeout: 10_000 }).toContain('now 1 h.');
    await noSidewaysScroll(narrow);
    await shot(narrow, 'benchmark-decode-signed-in-390');

    const res = await organizer.patch('/api/admin/benchmarks/qwen3-4b-decode', {
      runTimeLimitSeconds: 1500,
      reason: 'e2e: shorter runs',
    });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    await expect.poll(() => text(page, 'run-limit'), { timeout: 10_000 }).toContain('now 25 min.');
    expect(await text(page, 'code-first')).toContain('--wait 1500');

    // The version the page shows before the bump (the definition's, or an earlier bump's), then
    // one more: a fixed number here once passed on the version the page already showed.
    const before = Number(await text(page, 'rules-version'));
    expect(before).toBeGreaterThanOrEqual(1);
    const bump = await organizer.post('/api/admin/benchmarks/qwen3-4b-decode/rules-version', {
      reason: 'tolerance re-measured',
      confirm: true,
    });
    expect(bump.status, JSON.stringify(bump.body)).toBe(200);
    await expect.poll(() => text(page, 'rules-version'), { timeout: 10_000 }).toBe(String(before + 1));
    expect(await text(page, 'rules-changed')).toContain('tolerance re-measured');
  });

  it('signed in: the training page uploads through its own form and starts the chosen run', async () => {
    const page = await browserAs(owner, 'training-in');
    await page.goto('/benchmarks/deep-recurrence');
    await page.getByTestId('training-page').waitFor();
    await expect
      .poll(() => text(page, 'api-key-hint'))
      .toContain('Not needed here: signed in as pia-pages-e2e');
    await expect.poll(() => text(page, 'daily-limits')).toContain('Easy 60 (60 left today)');
    await page.getByTestId('form-tier').selectOption('easy');
    await page.getByTestId('form-dataset').selectOption('fibonacci');
    // a browser-renamed download is offered under the name the rules require
    await page.getByTestId('form-file').setInputFiles({
      name: 'submission (1).py',
      mimeType: 'text/x-python',
      buffer: readFileSync(path.join(ROOT, 'starters/deep-recurrence/submission.py')),
    });
    await page
      .getByTestId('renamed-offer')
      .getByText('Your browser saved this file as submission (1).py')
      .waitFor();
    await page.getByTestId('use-as-submission').click();
    await expect.poll(() => page.getByTestId('renamed-offer').count()).toBe(0);
    await page.getByTestId('form-upload').waitFor();
    await expect.poll(() => page.getByTestId('form-upload').isEnabled()).toBe(true);
    await shot(page, 'benchmark-training-signed-in');
    const narrow = await browserAs(owner, 'training-in-390', 390);
    await narrow.goto('/benchmarks/deep-recurrence');
    await narrow.getByTestId('training-page').waitFor();
    await expect
      .poll(() => text(narrow, 'daily-limits'), { timeout: 10_000 })
      .toContain('Easy 60 (60 left today)');
    await noSidewaysScroll(narrow);
    await shot(narrow, 'benchmark-training-signed-in-390');
    await page.getByTestId('form-upload').click();
    await page.waitForURL(/\/runs\/[0-9a-f-]{36}$/);
    const runId = page.url().split('/').pop()!;
    const run = await owner.get(`/api/runs/${runId}`);
    expect(run.body).toMatchObject({
      benchmarkId: 'deep-recurrence',
      tier: 'easy',
      dataset: 'fibonacci',
      mode: 'public',
    });
    // the run page links back to its benchmark's page
    await page.getByTestId('run-benchmark-link').click();
    await page.waitForURL(/\/benchmarks\/deep-recurrence$/);
    await expect.poll(() => text(page, 'daily-limits')).toContain('Easy 60 (59 left today)');

    // the ranked tier asks for the confirmation before it counts
    await page.getByTestId('form-tier').selectOption('hard');
    await page.getByTestId('form-file').setInputFiles({
      name: 'submission.py',
      mimeType: 'text/x-python',
      buffer: readFileSync(path.join(ROOT, 'starters/deep-recurrence/submission.py')),
    });
    await expect.poll(() => page.getByTestId('form-upload').isEnabled()).toBe(true);
    await page.getByTestId('form-upload').click();
    expect(await text(page, 'form-error')).toContain('Tick the box to confirm the Hard run');
    expect((await owner.get('/api/submissions?benchmark=deep-recurrence')).body.items).toHaveLength(1);
  });

  it('a double click on Upload stores one submission; the official confirmation says what will happen', async () => {
    const page = await browserAs(owner, 'double-click');
    await page.goto('/submissions?benchmark=toy-decode');
    // the submissions page links to its benchmark's page
    expect(await page.getByTestId('submissions-benchmark-link').getAttribute('href')).toBe(
      '/benchmarks/toy-decode',
    );
    await page.getByTestId('file-input').setInputFiles({
      name: 'engine.tar.gz',
      mimeType: 'application/gzip',
      buffer: await toyStarter(),
    });
    await expect.poll(() => page.getByTestId('upload').isEnabled()).toBe(true);
    await page.getByTestId('upload').dblclick();
    await page.getByTestId('upload-done').waitFor();
    await page.waitForTimeout(500);
    const list = (await owner.get('/api/submissions?benchmark=toy-decode')).body.items as { id: string }[];
    expect(list).toHaveLength(1);

    await page.goto(`/submissions/${list[0].id}`);
    await page.getByTestId('start-official').click();
    const promise = await text(page, 'official-promise');
    expect(promise).not.toContain('five samples');
    expect(promise).toContain(
      'Hidden workloads determine your score: at least 5 and up to 24 pairs each (the candidate beside the trusted engine), until the score’s 95 % interval is within ±3 %. Each pair can take up to twice the 5 s sample budget; a run over the 5 min whole-run limit is canceled, with the limit named.',
    );
  });

  it('390 px: the leaderboard score cell stays on a few lines and run tables keep TPOT in view', async () => {
    const up = await owner.upload(
      '/api/submissions',
      { benchmark: 'toy-decode' },
      { name: 'narrow.tar.gz', content: await toyStarter() },
    );
    const run = await owner
      .post(`/api/submissions/${up.body.submission.id}/runs`, { mode: 'official', confirm: true })
      .set('Idempotency-Key', `e2e-narrow-${Date.now()}`);
    expect(run.status, JSON.stringify(run.body)).toBe(201);
    const agent = new TestAgent(hub);
    await agent.claim(run.body.run.id);
    await agent.send(run.body.run.id, [
      {
        type: 'event',
        ts: Date.now(),
        event: {
          type: 'sample',
          workload: 'short',
          index: 0,
          warmup: false,
          ttftMs: 4.2,
          tpotMs: 1.73,
          tps: 570,
          totalMs: 45.6,
          tokens: 24,
        },
      },
    ]);
    await agent.finish(run.body.run.id, {
      status: 'succeeded',
      score: 104.1,
      interval: { low: 90.6, high: 113.3, halfWidth: 11.35, level: 0.95 },
      pairs: 24,
      workloads: [],
    });
    const page = await browserAs(null, 'board-390', 390);
    await page.goto('/leaderboard/toy-decode');
    const cell = page.getByTestId('lb-row').first().locator('td.score');
    await cell.waitFor();
    // the interval as it is, not ± its half-width
    expect((await page.getByTestId('lb-halfwidth').first().textContent())?.trim()).toBe('+9.2 −13.5');
    const box = (await cell.boundingBox())!;
    const line = await cell.evaluate((el) => parseFloat(getComputedStyle(el).lineHeight) || 20);
    expect(Math.round(box.height / line)).toBeLessThanOrEqual(4);
    await noSidewaysScroll(page);

    const mine = await browserAs(owner, 'run-390', 390);
    await mine.goto(`/runs/${run.body.run.id}`);
    const tpot = mine.getByTestId('samples-table').locator('th', { hasText: 'TPOT' });
    await tpot.waitFor();
    const th = (await tpot.boundingBox())!;
    expect(th.x + th.width).toBeLessThanOrEqual(390);
  });

  it('a public score says what it was measured against, never "the cached baseline" when it measured its own', async () => {
    const up = await owner.upload(
      '/api/submissions',
      { benchmark: 'toy-decode' },
      { name: 'public.tar.gz', content: await toyStarter() },
    );
    const run = await owner
      .post(`/api/submissions/${up.body.submission.id}/runs`, { mode: 'public' })
      .set('Idempotency-Key', `e2e-public-basis-${Date.now()}`);
    expect(run.status, JSON.stringify(run.body)).toBe(201);
    const note =
      'one sample per workload against the baseline measured just before on this machine (10 timed samples per workload)';
    const agent = new TestAgent(hub);
    await agent.claim(run.body.run.id);
    await agent.log(
      run.body.run.id,
      'no cached baseline: measuring the baseline engine on this machine first',
    );
    await agent.finish(run.body.run.id, {
      status: 'succeeded',
      score: 97.4,
      indicative: true,
      scoring: { against: 'baseline', calibrated: false, hardware: 'cpu', kHalfWidthPct: null, note },
    });
    const page = await browserAs(owner, 'public-basis');
    await page.goto(`/runs/${run.body.run.id}`);
    await expect.poll(() => text(page, 'run-scoring-note'), { timeout: 10_000 }).toBe(note);
    expect(await text(page, 'run-score-indicative')).toBe(
      'Indicative: one sample per workload, feedback only.',
    );
    expect(await page.locator('main').innerText()).not.toContain('against the cached baseline');
  });

  it('1280 px: a long log line is not cut: the log scrolls sideways to its last character, clear of the scrollbars', async () => {
    const up = await owner.upload(
      '/api/submissions',
      { benchmark: 'toy-decode' },
      { name: 'chatty.tar.gz', content: await toyStarter() },
    );
    const run = await owner
      .post(`/api/submissions/${up.body.submission.id}/runs`, { mode: 'public' })
      .set('Idempotency-Key', `e2e-long-line-${Date.now()}`);
    expect(run.status, JSON.stringify(run.body)).toBe(201);
    const agent = new TestAgent(hub);
    await agent.claim(run.body.run.id);
    const long = `step ${'0123456789 '.repeat(30)}LAST-WORD`;
    // Enough lines around it for a vertical scrollbar as well as the horizontal one.
    const filler = Array.from({ length: 60 }, (_, i) => `filler ${i}`);
    // (near the end: the log opens at its tail)
    await agent.log(run.body.run.id, 'short line', ...filler.slice(0, 55), long, ...filler.slice(55));
    await agent.finish(run.body.run.id, { status: 'succeeded' });
    const page = await browserAs(owner, 'log-1280', 1280, { scrollbars: true });
    await page.goto(`/runs/${run.body.run.id}`);
    const line = page.getByTestId('log-lines').locator('.line', { hasText: 'LAST-WORD' });
    await line.waitFor({ timeout: 10_000 });
    const seen = await page.getByTestId('log-lines').evaluate((scroller) => {
      scroller.scrollLeft = scroller.scrollWidth;
      const text = [...scroller.querySelectorAll('.line .text')].find((t) =>
        t.textContent?.endsWith('LAST-WORD'),
      )!;
      // the text node that ends the line (Svelte may put markers beside it)
      const walker = document.createTreeWalker(text, NodeFilter.SHOW_TEXT);
      let node: Text | null = null;
      for (let n = walker.nextNode(); n; n = walker.nextNode()) if (n.textContent) node = n as Text;
      const range = document.createRange();
      range.setStart(node!, node!.length - 1);
      range.setEnd(node!, node!.length);
      const last = range.getBoundingClientRect();
      const box = scroller.getBoundingClientRect();
      return {
        last: last.right,
        left: box.left,
        right: box.right,
        // What is not under the vertical scrollbar: the box's client area.
        clientRight: box.left + scroller.clientLeft + scroller.clientWidth,
        scrollbar: scroller.offsetWidth - scroller.clientLeft * 2 - scroller.clientWidth,
        viewport: document.documentElement.clientWidth,
      };
    });
    // the scrollbars are drawn, as in a desktop browser
    expect(seen.scrollbar).toBeGreaterThan(0);
    // the log box fits the page, and its last character can be brought wholly into view, with room
    // after it: the line's right padding scrolls too (before, the scroll stopped at the glyph's
    // edge and cut a fraction of it off at the rounded scroll width)
    expect(seen.right).toBeLessThanOrEqual(seen.viewport);
    expect(seen.last).toBeGreaterThan(seen.left);
    expect(seen.last).toBeLessThanOrEqual(seen.clientRight - 8);
  });

  it('a team page follows a new best and a rules bump live', async () => {
    const slug = (await owner.get('/api/me')).body.teams[0].slug as string;
    // A place of its own first, below the new best, so the test holds when run alone (`-t`): a team
    // without one has no team page to open.
    const first = await owner.upload(
      '/api/submissions',
      { benchmark: 'toy-decode' },
      { name: 'first.tar.gz', content: await toyStarter() },
    );
    const placed = await owner
      .post(`/api/submissions/${first.body.submission.id}/runs`, { mode: 'official', confirm: true })
      .set('Idempotency-Key', `e2e-team-place-${Date.now()}`);
    expect(placed.status, JSON.stringify(placed.body)).toBe(201);
    await new TestAgent(hub).complete(placed.body.run.id, 101.5);
    const page = await browserAs(null, 'team-live');
    await page.goto(`/teams/${slug}`);
    await page.getByTestId('public-team-name').waitFor();
    expect(await page.locator('main').innerText()).not.toContain('131.5');
    const up = await owner.upload(
      '/api/submissions',
      { benchmark: 'toy-decode' },
      { name: 'faster.tar.gz', content: await toyStarter() },
    );
    const run = await owner
      .post(`/api/submissions/${up.body.submission.id}/runs`, { mode: 'official', confirm: true })
      .set('Idempotency-Key', `e2e-team-live-${Date.now()}`);
    expect(run.status, JSON.stringify(run.body)).toBe(201);
    await new TestAgent(hub).complete(run.body.run.id, 131.5);
    await expect.poll(() => page.locator('main').innerText(), { timeout: 15_000 }).toContain('131.5');
    // a disqualification reaches the open page: the result is listed as disqualified, with its reason
    const dq = await organizer.post(`/api/admin/runs/${run.body.run.id}/disqualify`, {
      reason: 'e2e: timed its own clock',
    });
    expect(dq.status, JSON.stringify(dq.body)).toBe(200);
    await page.getByTestId('team-disqualified').waitFor({ timeout: 15_000 });
    expect(await text(page, 'team-disqualified')).toContain('Reason: e2e: timed its own clock');
    const bump = await organizer.post('/api/admin/benchmarks/toy-decode/rules-version', {
      reason: 'e2e: team page live',
      confirm: true,
    });
    expect(bump.status, JSON.stringify(bump.body)).toBe(200);
    await page.getByTestId('team-no-place').waitFor({ timeout: 15_000 });
  });

  it('a refunded run gives its quota back on the open page, without a reload', async () => {
    const up = await owner.upload(
      '/api/submissions',
      { benchmark: 'deep-recurrence' },
      {
        name: 'submission.py',
        content: readFileSync(path.join(ROOT, 'starters/deep-recurrence/submission.py')),
      },
    );
    expect(up.status, JSON.stringify(up.body)).toBe(201);
    const page = await browserAs(owner, 'refund');
    await page.goto(`/submissions/${up.body.submission.id}`);
    const easy = page.getByTestId('tier-quota-easy');
    // the quota is read after the page loads: on a busy box that can take longer than a second
    await expect.poll(() => easy.textContent(), { timeout: 10_000 }).toMatch(/^\d+ of 60 left today/);
    const before = Number((await easy.textContent())!.split(' ')[0]);
    const run = await owner
      .post(`/api/submissions/${up.body.submission.id}/runs`, {
        mode: 'public',
        tier: 'easy',
        dataset: 'square',
      })
      .set('Idempotency-Key', `e2e-refund-${Date.now()}`);
    expect(run.status, JSON.stringify(run.body)).toBe(201);
    await expect
      .poll(() => easy.textContent(), { timeout: 10_000 })
      .toContain(`${before - 1} of 60 left today`);
    const cancel = await owner.post(`/api/runs/${run.body.run.id}/cancel`, { reason: 'e2e: refund' });
    expect(cancel.status, JSON.stringify(cancel.body)).toBe(200);
    await expect.poll(() => easy.textContent(), { timeout: 10_000 }).toContain(`${before} of 60 left today`);
    expect(await easy.textContent()).toContain('refunded');
  });

  it('the organizer’s All runs names a practice run by its tier, not Public', async () => {
    const up = await owner.upload(
      '/api/submissions',
      { benchmark: 'deep-recurrence' },
      {
        name: 'submission.py',
        content: readFileSync(path.join(ROOT, 'starters/deep-recurrence/submission.py')),
      },
    );
    expect(up.status, JSON.stringify(up.body)).toBe(201);
    const run = await owner
      .post(`/api/submissions/${up.body.submission.id}/runs`, {
        mode: 'public',
        tier: 'medium',
        dataset: 'square',
      })
      .set('Idempotency-Key', `e2e-admin-practice-${Date.now()}`);
    expect(run.status, JSON.stringify(run.body)).toBe(201);
    const page = await browserAs(organizer, 'admin-runs');
    await page.goto('/admin/runs');
    const row = page.locator('tr', { has: page.locator(`a[href="/runs/${run.body.run.id}"]`) });
    await row.waitFor({ timeout: 10_000 });
    expect((await row.getByTestId('mode-badge').textContent())?.trim()).toBe('Practice · Medium');
  });

  it('no console errors', () => {
    expect(consoleErrors).toEqual([]);
  });
});
