import { mkdirSync } from 'node:fs';
import * as path from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { HarnessSampleEvent } from '@dryft/libs';
import { toyStarter } from '../support/archives';
import { BrowserProfiles, recordPageErrors, requireBuiltWebApp, SCREENSHOTS } from '../support/browser';
import { startTestHub, type TestHub } from '../support/hub';
import { hasChromium } from '../support/prerequisites';
import { TestAgent } from '../support/test-agent';
import { ownerWithTeam, signIn, type TestUser } from '../support/users';

/**
 * The participant's path through the web, past the happy path: removing a member and the invite
 * code, the run page live / succeeded / canceled at a lowered whole-run limit, the leaderboard and a
 * team page after a rules bump, the Submissions page (default benchmark, Connect a repository, a ZIP,
 * collapsed rule lists), the cancel dialog, stable chart colours, the 404 page and the training
 * wording. The real API on real Postgres serves the built app; TestAgent reports runs through the
 * same lifecycle the /agents gateway uses; Debian's Chromium drives the pages.
 *
 * Screenshots committed under test/e2e/screenshots/ (see .gitignore): participant-run-live.png,
 * participant-run-succeeded.png, participant-run-failed.png, participant-leaderboard-rules-bump.png.
 */
const ORGANIZER = 'org-participant-e2e';

let hub: TestHub;
const profiles = new BrowserProfiles('dryft-e2e-');
const consoleErrors: string[] = [];
/** Failed requests the test provokes on purpose (Chromium logs every failed fetch as an error). */
const expected404 = /\/api\/public\/teams\/[^ ]+|\/api\/teams\/join/;

async function browserAs(user: TestUser | null, label: string): Promise<Page> {
  const page = await profiles.openPage(label, { baseURL: hub.baseUrl, cookie: user?.cookie });
  recordPageErrors(
    page,
    label,
    consoleErrors,
    (msg, where) => msg.text().includes('404') && expected404.test(where),
  );
  return page;
}

const shot = (page: Page, name: string) =>
  page.screenshot({ path: path.join(SCREENSHOTS, `${name}.png`), fullPage: true });

function sample(workload: string, index: number, ttftMs: number, tpotMs: number): HarnessSampleEvent {
  return {
    type: 'sample',
    workload,
    index,
    warmup: false,
    ttftMs,
    tpotMs,
    tps: 1000 / tpotMs,
    totalMs: ttftMs + 32 * tpotMs,
    tokens: 32,
  };
}

async function sendSamples(agent: TestAgent, runId: string, samples: HarnessSampleEvent[]) {
  await agent.send(
    runId,
    samples.map((event) => ({ type: 'event' as const, ts: Date.now(), event })),
  );
}

/** The legend colour of each series of a chart, by its label. */
async function legendColours(page: Page, testid: string): Promise<Record<string, string>> {
  return page.getByTestId(testid).evaluate((el) => {
    const out: Record<string, string> = {};
    for (const row of el.querySelectorAll('.u-legend .u-series')) {
      const label = row.querySelector('.u-label')?.textContent?.trim();
      const marker = row.querySelector('.u-marker') as HTMLElement | null;
      if (label && marker && label !== 'sample') out[label] = getComputedStyle(marker).borderTopColor;
    }
    return out;
  });
}

describe.skipIf(!hasChromium())("the participant's path in the web", () => {
  let owner: TestUser;
  let member: TestUser;
  let organizer: TestUser;
  let team: { id: string; inviteCode: string; slug: string; name: string };
  let submissionId: string;
  const agent = () => new TestAgent(hub, 'gpu-7');

  beforeAll(async () => {
    requireBuiltWebApp();
    mkdirSync(SCREENSHOTS, { recursive: true });
    // No sweeper stop at the deadline: the agent's own report of a stop at a lowered limit is tested.
    hub = await startTestHub({ env: { ADMIN_LOGINS: ORGANIZER, DEADLINE_GRACE_SECONDS: '3600' } });
    ({ owner, team } = await ownerWithTeam(hub, 'olga-e2e', 'Pipeline Crew'));
    member = await signIn(hub, 'max-e2e');
    expect((await member.post('/api/teams/join', { code: team.inviteCode })).status).toBe(200);
    organizer = await signIn(hub, ORGANIZER);
    const up = await owner.upload(
      '/api/submissions',
      { benchmark: 'toy-decode' },
      { name: 'submission.tar.gz', content: await toyStarter() },
    );
    expect(up.status).toBe(201);
    submissionId = up.body.submission.id;
  });

  afterAll(async () => {
    await profiles.closeAll();
    await hub?.close();
  });

  const startRun = async (mode: 'public' | 'official') => {
    const res = await owner
      .post(`/api/submissions/${submissionId}/runs`, {
        mode,
        ...(mode === 'official' ? { confirm: true } : {}),
      })
      .set('Idempotency-Key', `e2e-${mode}-${Date.now()}-${Math.random()}`);
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    return res.body.run.id as string;
  };

  it('7, 11: removing a member offers a new invite code; regenerating asks first; names are not cut', async () => {
    const page = await browserAs(owner, 'team');
    await page.goto('/team');
    const codeBefore = (await page.getByTestId('invite-code').textContent())!.trim();
    expect(codeBefore).toBe(team.inviteCode);
    // the team does not rank: no public-page link that would lead to a 404
    await page.getByTestId('no-public-page').waitFor();
    expect(await page.getByTestId('public-page-link').count()).toBe(0);
    // the two forms side by side line up
    const [a, b] = await page
      .locator('.grid2 > .card')
      .evaluateAll((els) => els.map((e) => Math.round(e.getBoundingClientRect().top)));
    expect(a).toBe(b);
    // a long name is not truncated silently
    const long = 'A'.repeat(70);
    await page.getByTestId('create-team-name').fill(long);
    expect(await page.getByTestId('create-team-name').inputValue()).toBe(long);
    expect(await page.getByTestId('team-name-count').textContent()).toContain(
      '70 characters: team names have at most 60',
    );
    await page.getByTestId('create-team-name').fill('');

    await page.getByRole('button', { name: 'Remove' }).click();
    const dialog = page.getByTestId('remove-dialog');
    await dialog.getByText(`could rejoin with it at once`).waitFor();
    expect(await dialog.getByTestId('remove-regenerate').isChecked()).toBe(true);
    await dialog.getByRole('button', { name: 'Remove' }).click();
    await page.getByText('max-e2e was removed from the team, and the invite code was regenerated').waitFor();
    const codeAfter = (await page.getByTestId('invite-code').textContent())!.trim();
    expect(codeAfter).not.toBe(codeBefore);
    // the removed member cannot rejoin with the old code
    const rejoin = await member.post('/api/teams/join', { code: codeBefore });
    expect(rejoin.status).toBeGreaterThanOrEqual(400);

    // Regenerate asks before it invalidates the code
    await page.getByTestId('regenerate-code').click();
    await page.getByTestId('regenerate-dialog').getByText('stops working at once').waitFor();
    await page.getByRole('button', { name: 'Keep the current code' }).click();
    expect((await page.getByTestId('invite-code').textContent())!.trim()).toBe(codeAfter);
    await page.getByTestId('regenerate-code').click();
    await page.getByTestId('confirm-regenerate').click();
    await expect
      .poll(async () => (await page.getByTestId('invite-code').textContent())!.trim())
      .not.toBe(codeAfter);
  });

  it('run page: live, then succeeded; chart colours follow the workload, not the arrival order', async () => {
    const page = await browserAs(owner, 'run');
    const queued = await startRun('public');
    await page.goto(`/runs/${queued}`);
    // queued: no empty chart frames
    await page.getByTestId('timings-empty').getByText('once the run starts measuring').waitFor();
    expect(await page.getByTestId('chart-ttft').count()).toBe(0);

    const gpu = agent();
    await gpu.claim(queued);
    await gpu.log(queued, 'candidate: Engine(model_path) ready', 'b1-p16 sample 0: 40.1 ms');
    await sendSamples(gpu, queued, [sample('b1-p16', 0, 4.1, 1.1), sample('b4-p64', 0, 9.3, 1.9)]);
    await gpu.log(queued, 'b4-p64 sample 0: 70.0 ms');
    await sendSamples(gpu, queued, [sample('b1-p16', 1, 4.0, 1.05), sample('b4-p64', 1, 9.0, 1.85)]);
    await expect
      .poll(async () => Number(await page.getByTestId('chart-ttft').getAttribute('data-points')), {
        timeout: 20_000,
      })
      .toBe(4);
    await expect.poll(() => page.getByTestId('log-count').textContent()).toContain('3');
    await shot(page, 'participant-run-live');
    const coloursA = await legendColours(page, 'chart-ttft');

    await gpu.send(queued, [
      {
        type: 'event',
        ts: Date.now(),
        event: { type: 'check', name: 'output', passed: true, detail: 'every token matched' },
      },
    ]);
    await gpu.finish(queued, {
      status: 'succeeded',
      score: 131.4,
      message: 'All checks passed.',
      workloads: ['b1-p16', 'b4-p64'].map((w, i) => ({
        workload: w,
        samples: 2,
        tps: 900 - i * 300,
        ttftMs: 4 + i * 5,
        tpotMs: 1.1 + i * 0.8,
        totalMs: 40 + i * 30,
        spreadPct: 4.2,
        speedup: 1.3 + i * 0.03,
      })),
    });
    await expect
      .poll(async () => (await page.getByTestId('run-status').textContent())!.trim(), { timeout: 20_000 })
      .toBe('succeeded');
    await page.getByTestId('samples-table').waitFor();
    await page.getByText('Public runs never change the leaderboard.').waitFor();
    await shot(page, 'participant-run-succeeded');

    // Another run whose samples arrive in the other order: every workload keeps its colour.
    const second = await startRun('public');
    await gpu.claim(second);
    await sendSamples(gpu, second, [sample('b4-p64', 0, 9.1, 1.9), sample('b1-p16', 0, 4.2, 1.1)]);
    await page.goto(`/runs/${second}`);
    await expect
      .poll(async () => Number(await page.getByTestId('chart-ttft').getAttribute('data-points')), {
        timeout: 20_000,
      })
      .toBe(2);
    const coloursB = await legendColours(page, 'chart-ttft');
    expect(Object.keys(coloursA).sort()).toEqual(['b1-p16', 'b4-p64']);
    expect(coloursB).toEqual(coloursA);
    expect(coloursA['b1-p16']).not.toBe(coloursA['b4-p64']);

    // 11: the cancel dialog: no value-like placeholder, and a refusal that says what to do
    await page.getByTestId('cancel-run').click();
    expect(await page.getByTestId('cancel-reason').getAttribute('placeholder')).toBeNull();
    await page.getByTestId('cancel-dialog').getByText('For example: started the wrong submission.').waitFor();
    await page.getByTestId('confirm-cancel').click();
    await page
      .getByTestId('cancel-dialog')
      .getByText('A reason is required to cancel: type why you are canceling this run.')
      .waitFor();
    await page.getByTestId('cancel-reason').fill('checked enough');
    await page.getByTestId('confirm-cancel').click();
    await expect
      .poll(async () => (await page.getByTestId('run-status').textContent())!.trim(), { timeout: 20_000 })
      .toMatch(/^cancel/);
  });

  it('9: a run stopped at a lowered whole-run limit is canceled with the limit that applied, explained', async () => {
    const page = await browserAs(owner, 'failed');
    const runId = await startRun('public');
    const gpu = agent();
    await gpu.claim(runId);
    await gpu.log(runId, 'candidate: Engine(model_path) ready', 'b1-p16 sample 0 …');
    await page.goto(`/runs/${runId}`);
    await page.getByTestId('run-limit').getByText('5 min for this run').waitFor();
    // The organizer lowers the limit to 2 minutes, when the run has already gone for 3 minutes.
    await hub.dataSource.query(`UPDATE runs SET assigned_at = now() - interval '180 seconds' WHERE id = $1`, [
      runId,
    ]);
    expect(
      (await organizer.patch('/api/admin/benchmarks/toy-decode', { runTimeLimitSeconds: 120 })).status,
    ).toBe(200);
    await expect
      .poll(() => page.getByTestId('run-limit').textContent(), { timeout: 20_000 })
      .toContain('2 min');
    await gpu.log(runId, "stopping: the run reached the organizer's whole-run time limit");
    // what apps/gpu-agent reports when its deadline timer fires (verdict.ts)
    await gpu.finish(
      runId,
      {
        status: 'failed',
        failureCode: null,
        message: "Canceled: the run exceeded the organizer's whole-run time limit.",
        detail:
          'Traceback (most recent call last):\n  File "engine.py", line 41, in generate\n    time.sleep(600)\nKeyboardInterrupt',
      },
      true,
      'run_time_limit',
    );
    await expect
      .poll(async () => (await page.getByTestId('run-status').textContent())!.trim(), { timeout: 20_000 })
      .toBe('canceled · whole-run limit');
    const failure = page.getByTestId('failure');
    // the seed: a run over the whole-run limit is canceled with an explanation, not "failed · timeout"
    expect(await failure.getByTestId('failure-title').textContent()).toContain(
      'Canceled at the whole-run time limit',
    );
    await failure.getByText('The organizer’s whole-run time limit (2 min for this run) stopped it').waitFor();
    await failure
      .getByText("Canceled: the run exceeded the organizer's whole-run time limit of 120 s.", { exact: true })
      .waitFor();
    await failure.getByText('It had started, so it counts as a run for the daily limit').waitFor();
    await failure.getByText('File "engine.py", line 41').waitFor();
    expect(await page.getByTestId('run-limit').textContent()).toContain('2 min for this run');
    // ended without samples: no empty chart frames
    await page.getByTestId('timings-empty').getByText('No timed samples were recorded.').waitFor();
    expect(await page.getByTestId('chart-ttft').count()).toBe(0);
    await shot(page, 'participant-run-failed');
    await organizer.patch('/api/admin/benchmarks/toy-decode', { runTimeLimitSeconds: 300 });
  });

  it('8: after a rules bump the leaderboard and the team page explain; public runs are not invalidated', async () => {
    const gpu = agent();
    const official = await startRun('official');
    await gpu.complete(official, 142.5);
    const publicRun = await startRun('public');
    await gpu.complete(publicRun, 150);
    const spectator = await browserAs(null, 'spectator');
    await spectator.goto('/leaderboard/toy-decode');
    await spectator.getByTestId('lb-row').first().waitFor();
    expect(await spectator.getByTestId('rules-changed').count()).toBe(0);

    const reason = 'The hidden workloads now include batch 8; earlier results were measured without it.';
    const bump = await organizer.post('/api/admin/benchmarks/toy-decode/rules-version', {
      reason,
      confirm: true,
    });
    expect([200, 201]).toContain(bump.status);
    await spectator.reload();
    const notice = spectator.getByTestId('rules-changed');
    await notice.waitFor();
    expect(await notice.textContent()).toContain('Rules changed to v2');
    expect(await notice.textContent()).toContain(reason);
    expect(await notice.textContent()).toMatch(/on \w+/);
    await spectator.getByText('No official results under rules v2 yet.').waitFor();
    await shot(spectator, 'participant-leaderboard-rules-bump');

    // The team page explains rather than offering "Try again".
    await spectator.goto(`/teams/${team.slug}`);
    const noPlace = spectator.getByTestId('team-no-place');
    await noPlace.waitFor();
    expect(await noPlace.getByTestId('team-rules-changed').textContent()).toContain(reason);
    expect(await spectator.getByRole('button', { name: 'Try again' }).count()).toBe(0);

    // The official result is invalidated; the public run, which never ranked, is not.
    const page = await browserAs(owner, 'invalidated');
    await page.goto(`/runs/${official}`);
    await page.getByText('This result was invalidated').waitFor();
    await page.goto(`/runs/${publicRun}`);
    await page.getByTestId('samples-table').waitFor();
    expect(await page.getByText('This result was invalidated').count()).toBe(0);
  });

  it('10, 11: Submissions: the quick-start benchmark, Connect a repository, a ZIP and collapsed rules', async () => {
    const page = await browserAs(owner, 'submissions');
    const statuses: string[] = [];
    page.on('response', (r) => {
      if (r.url().includes('/api/')) statuses.push(`${r.status()} ${new URL(r.url()).pathname}`);
    });
    await page.goto('/submissions');
    expect(await page.getByTestId('benchmark-select').inputValue()).toBe('toy-decode');
    await page.getByTestId('connect-card').getByText('Or connect a GitHub repository').waitFor();
    await page.getByTestId('connect-unavailable').waitFor();
    // A ZIP: only the format rule is judged; the others were never checked.
    const zip = Buffer.concat([Buffer.from('PK\u0003\u0004'), Buffer.alloc(200, 1)]);
    await page
      .getByTestId('file-input')
      .setInputFiles({ name: 'engine.zip', mimeType: 'application/zip', buffer: zip });
    const local = page.locator('[aria-label="Checked on your computer"]');
    await local.getByTestId('rules-unchecked').waitFor();
    expect(await local.locator('[data-passed="true"]').count()).toBe(0);
    expect(await local.locator('[data-rule="format"][data-passed="false"]').count()).toBe(1);
    expect(await local.getByText('✓').count()).toBeLessThanOrEqual(1); // at most the compressed-size summary
    // The starter: every rule passes, on one line.
    await page.getByTestId('file-input').setInputFiles({
      name: 'submission.tar.gz',
      mimeType: 'application/gzip',
      buffer: await toyStarter(),
    });
    await local.getByTestId('rules-passed-summary').getByText('12 rules pass').waitFor();
    expect(await local.locator('li').count()).toBe(1);
    await local.getByRole('button', { name: 'show' }).click();
    expect(await local.locator('[data-passed="true"]').count()).toBe(12); // python_syntax is the 12th
    expect(statuses.filter((s) => /^4\d\d /.test(s))).toEqual([]);

    // Without a team: no request that the hub must refuse.
    const loner = await signIn(hub, 'solo-e2e');
    const lonely = await browserAs(loner, 'no-team');
    const lonelyStatuses: string[] = [];
    lonely.on('response', (r) => {
      if (r.url().includes('/api/')) lonelyStatuses.push(`${r.status()} ${new URL(r.url()).pathname}`);
    });
    await lonely.goto('/submissions');
    await lonely.getByText('team', { exact: false }).first().waitFor();
    await lonely.waitForLoadState('networkidle');
    expect(lonelyStatuses.filter((s) => s.includes('/api/submissions'))).toEqual([]);
  });

  it('10, 11: the training benchmark speaks of practice and Hard; a 404 page leads back', async () => {
    const page = await browserAs(owner, 'training');
    const up = await owner.upload(
      '/api/submissions',
      { benchmark: 'deep-recurrence' },
      { name: 'submission.py', content: Buffer.from('SUBMISSION = None\n') },
    );
    expect(up.status, JSON.stringify(up.body)).toBe(201);
    await page.goto(`/submissions/${up.body.submission.id}`);
    await page.getByText('Practice runs (Easy, Medium) train on a practice dataset').waitFor();
    await page.getByRole('radio', { name: /Hard/ }).check();
    expect((await page.getByTestId('start-official').textContent())!.trim()).toBe('Start Hard run');
    expect(await page.getByText('Official runs rank').count()).toBe(0);
    // A practice run is named by its tier, its accuracy is in percent, and its rank says which tier ranks.
    const practice = await owner
      .post(`/api/submissions/${up.body.submission.id}/runs`, {
        mode: 'public',
        tier: 'easy',
        dataset: 'square',
      })
      .set('Idempotency-Key', `e2e-practice-${Date.now()}`);
    expect(practice.status, JSON.stringify(practice.body)).toBe(201);
    const gpu = agent();
    await gpu.claim(practice.body.run.id);
    await sendSamples(gpu, practice.body.run.id, [
      {
        type: 'sample',
        workload: 'square',
        index: 0,
        warmup: false,
        ttftMs: null,
        tpotMs: null,
        tps: 5200,
        totalMs: 60_000,
        tokens: 312_000,
        metrics: { accuracy: 63.12, updates: 480 },
      },
    ]);
    await gpu.finish(practice.body.run.id, {
      status: 'succeeded',
      score: 63.12,
      metrics: { accuracy: 63.12 },
    });
    await page.goto(`/runs/${practice.body.run.id}`);
    expect((await page.getByTestId('mode-badge').textContent())!.trim()).toBe('Practice · Easy');
    await expect.poll(() => page.getByTestId('run-score').textContent()).toBe('63.12%');
    await page
      .getByText('Practice runs give feedback, not a leaderboard score. Start a Hard run to rank.')
      .waitFor();
    await page.getByText('Practice runs never change the leaderboard.').waitFor();
    await page.getByTestId('samples-table').getByText('accuracy 63.12%').waitFor();
    expect(await page.getByTestId('samples-table').innerText()).toContain('updates 480.0');
    // a training run's samples have no decode columns
    expect(await page.getByTestId('samples-table').locator('th').allTextContents()).toEqual([
      'Workload',
      '#',
      'Total',
      'Metrics',
    ]);

    // the CPU practice benchmark has no ranked tier: nothing names one, the tier is said once, the
    // CLI hint carries the --dataset the CLI requires
    const cpu = await owner.upload(
      '/api/submissions',
      { benchmark: 'recurrence-cpu' },
      { name: 'submission.py', content: Buffer.from('SUBMISSION = None\n') },
    );
    expect(cpu.status, JSON.stringify(cpu.body)).toBe(201);
    await page.goto(`/submissions/${cpu.body.submission.id}`);
    expect((await page.getByTestId('ranking-sentence').textContent())!.trim()).toBe(
      'Practice runs (Practice (CPU)) train on a practice dataset, for feedback; they never change the leaderboard. This benchmark has no ranked tier: none of its runs ranks.',
    );
    expect((await page.getByTestId('cli-run-hint').textContent())!.trim()).toBe(
      `dryft run ${cpu.body.submission.id} --tier practice --dataset square`,
    );
    const cpuRun = await owner
      .post(`/api/submissions/${cpu.body.submission.id}/runs`, {
        mode: 'public',
        tier: 'practice',
        dataset: 'square',
      })
      .set('Idempotency-Key', `e2e-cpu-${Date.now()}`);
    expect(cpuRun.status, JSON.stringify(cpuRun.body)).toBe(201);
    await page.goto(`/runs/${cpuRun.body.run.id}`);
    expect((await page.getByTestId('mode-badge').textContent())!.trim()).toBe('Practice');
    await page.goto('/submissions?benchmark=recurrence-cpu');
    await page.getByText('open a submission and start a practice run.').waitFor();
    expect(await page.getByText('Hard').count()).toBe(0);

    await page.goto('/no-such-page');
    await page.getByTestId('error-page').getByText('Page not found').waitFor();
    await page.getByRole('link', { name: 'Benchmarks' }).last().click();
    await page.getByTestId('benchmark-card').first().waitFor();
    expect(consoleErrors).toEqual([]);
  });
});
