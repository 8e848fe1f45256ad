import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import type { Page } from 'playwright-core';
import { createHmac } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
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
 * The organizer's console in Chromium, on the built web app served by the real API on real
 * Postgres. Results are landed by the in-process TestAgent (the subject is the console, not the
 * harness). An organizer finds a run, disqualifies it (a spectator's open leaderboard drops it
 * live), bans a team and reads the audit log; the banned participant sees why and is refused an
 * upload; the team's run page and public page show the disqualification's reason.
 */
const ORGANIZER = 'olga-org';

describe.skipIf(!hasChromium())("the organizer's console end to end", () => {
  let hub: TestHub;
  const profiles = new BrowserProfiles('dryft-e2e-org-');
  const pageErrors: string[] = [];
  let ann: TestUser;
  let annTeam: { id: string; slug: string };
  let bobTeam: { id: string; slug: string };
  const runs: Record<string, string> = {};

  async function browser(label: string, permissions: string[] = []): Promise<Page> {
    const page = await profiles.openPage(label, { baseURL: hub.baseUrl, permissions });
    // The refused upload is an expected 403; anything else logged as an error fails the test.
    recordPageErrors(page, label, pageErrors, (msg) => /status of 403/.test(msg.text()));
    return page;
  }

  const shot = (page: Page, name: string) =>
    page.screenshot({ path: path.join(SCREENSHOTS, `${name}.png`), fullPage: true });

  beforeAll(async () => {
    requireBuiltWebApp();
    mkdirSync(SCREENSHOTS, { recursive: true });
    // The test's webhook receiver listens on loopback.
    hub = await startTestHub({ env: { ADMIN_LOGINS: ORGANIZER, OUTGOING_WEBHOOK_ALLOW_PRIVATE: 'true' } });
    const agent = new TestAgent(hub);
    let bob: TestUser;
    ({ owner: ann, team: annTeam } = await ownerWithTeam(hub, 'ann-e2e', 'Fast Decoders'));
    ({ owner: bob, team: bobTeam } = await ownerWithTeam(hub, 'bob-e2e', 'Metric Benders'));
    const official = async (user: TestUser, key: string, score: number) => {
      const up = await user.upload(
        '/api/submissions',
        { benchmark: 'toy-decode' },
        { name: `${key}.tar.gz`, content: await toyStarter() },
      );
      const run = (
        await user.post(`/api/submissions/${up.body.submission.id}/runs`, { mode: 'official', confirm: true })
      ).body.run;
      await agent.complete(run.id, score);
      runs[key] = run.id;
    };
    await official(ann, 'ann', 140);
    await official(bob, 'bob', 180);
    // A queued run of Bob's that the ban will cancel.
    const up = await bob.upload(
      '/api/submissions',
      { benchmark: 'toy-decode' },
      { name: 'late.tar.gz', content: await toyStarter() },
    );
    runs.bobQueued = (
      await bob.post(`/api/submissions/${up.body.submission.id}/runs`, { mode: 'public' })
    ).body.run.id;
  });

  afterAll(async () => {
    await profiles.closeAll();
    await hub?.close();
  });

  it(
    'disqualifies, bans and audits from the console; participants see why',
    { timeout: 180_000 },
    async () => {
      // A spectator watches the leaderboard: Bob's team leads.
      const spectator = await browser('spectator');
      await spectator.goto('/leaderboard/toy-decode');
      await expect
        .poll(() => spectator.getByTestId('lb-row').first().getAttribute('data-holder'))
        .toContain(bobTeam.slug);
      await expect.poll(() => spectator.getByTestId('live-indicator').textContent()).toContain('live');

      // The organizer's console: all runs, filtered to Bob's team.
      const org = await browser('organizer');
      await signInThroughForm(org, ORGANIZER);
      await org.getByRole('link', { name: 'All runs' }).click();
      await org.getByTestId('admin-run-row').first().waitFor();
      expect(await org.getByTestId('admin-run-row').count()).toBe(3);
      await org.locator('#f-team').fill(bobTeam.slug);
      await org.locator('#f-status').selectOption('succeeded');
      await org.getByRole('button', { name: 'Filter' }).click();
      await expect.poll(() => org.getByTestId('admin-run-row').count()).toBe(1);
      await shot(org, 'organizer-01-all-runs');

      // Disqualify Bob's result with a reason: it leaves the spectator's board at once.
      const row = org.locator(`[data-run="${runs.bob}"]`);
      await row.getByRole('button', { name: 'Disqualify…' }).click();
      await org.locator('#dq-reason').fill('Timed its own clock instead of the harness');
      await shot(org, 'organizer-02-disqualify-dialog');
      await org.getByTestId('dq-dialog').getByRole('button', { name: 'Disqualify', exact: true }).click();
      await row.getByText('disqualified').waitFor();
      await expect.poll(() => spectator.getByTestId('lb-row').count(), { timeout: 15_000 }).toBe(1);
      expect(await spectator.getByTestId('lb-row').first().getAttribute('data-holder')).toContain(
        annTeam.slug,
      );
      await shot(spectator, 'organizer-03-leaderboard-after-disqualification');

      // The organizer reads Bob's run page, logs included.
      await org.goto(`/runs/${runs.bob}`);
      await org.getByTestId('run-disqualified').waitFor();
      await expect.poll(() => org.getByText('measuring').count()).toBeGreaterThan(0);

      // Ban Bob's team on toy-decode for three days.
      await org.goto('/admin/bans');
      await org.locator('#ban-kind').selectOption('team');
      await org.locator('#ban-subject').fill(bobTeam.slug);
      await org.locator('#ban-bench').selectOption('toy-decode');
      await org.locator('#ban-reason').fill('Repeated rule-breaking');
      const end = new Date(Date.now() + 3 * 86400_000);
      const local = new Date(end.getTime() - end.getTimezoneOffset() * 60_000).toISOString().slice(0, 16);
      await org.locator('#ban-end').fill(local);
      await org.getByTestId('ban-form').getByRole('button', { name: 'Ban' }).click();
      // The form's own notice (the page's help text says "Their queued runs are canceled" too, and
      // getByText is case-blind: that paragraph alone let this pass before the ban was answered).
      await org.getByText(`Banned team ${bobTeam.slug}; their queued runs are canceled.`).waitFor();
      await org.getByTestId('bans').getByText('Repeated rule-breaking').waitFor();
      await shot(org, 'organizer-04-bans');
      await expect
        .poll(
          async () =>
            (await hub.http.get(`/api/admin/runs?q=${runs.bobQueued}`).set('Cookie', await orgCookie())).body
              .items?.[0]?.status,
        )
        .toBe('canceled');

      // The audit log has both actions, with who and why.
      await org.getByRole('link', { name: 'Audit log' }).click();
      await org.getByTestId('audit').getByText('ban.create').waitFor();
      await org.getByTestId('audit').getByText('run.disqualify').waitFor();
      expect(
        await org.getByTestId('audit').getByText('Timed its own clock instead of the harness').count(),
      ).toBe(1);
      await shot(org, 'organizer-05-audit-log');

      // The banned participant: the reason and the end on every page; an upload is refused with both.
      const bob = await browser('banned');
      await signInThroughForm(bob, 'bob-e2e');
      await bob.goto('/submissions');
      const notice = bob.getByTestId('ban-notice');
      await notice.waitFor();
      expect(await notice.textContent()).toContain('Repeated rule-breaking');
      expect(await notice.textContent()).toContain('Metric Benders');
      const starter = path.join(profiles.folders[0], 'engine.tar.gz');
      writeFileSync(starter, await toyStarter());
      if (await bob.getByTestId('benchmark-select').count())
        await bob.getByTestId('benchmark-select').selectOption('toy-decode');
      await bob.getByTestId('file-input').setInputFiles(starter);
      await bob.getByText('all rules pass').first().waitFor();
      await bob.getByTestId('upload').click();
      const refusal = bob.getByRole('alert').filter({ hasText: 'cannot upload submissions' });
      await refusal.waitFor();
      expect(await refusal.textContent()).toContain('Reason: Repeated rule-breaking');
      await shot(bob, 'banned-01-participant-view');
      // Their own results stay readable, with the disqualification's reason.
      await bob.goto(`/runs/${runs.bob}`);
      await bob.getByTestId('run-disqualified').waitFor();
      expect(await bob.getByTestId('run-disqualified').textContent()).toContain('Timed its own clock');
      await shot(bob, 'disqualified-01-run-page');

      // The public team page shows the disqualified result and why.
      await spectator.goto(`/teams/${bobTeam.slug}`);
      await spectator.getByTestId('team-disqualified').waitFor();
      expect(await spectator.getByTestId('team-disqualified').textContent()).toContain(
        'Timed its own clock instead of the harness',
      );
      await shot(spectator, 'disqualified-02-public-team-page');

      expect(pageErrors).toEqual([]);
    },
  );

  it(
    'sets a round clock and schedules a close from the console; a spectator sees both live',
    { timeout: 120_000 },
    async () => {
      const spectator = await browser('clock-spectator');
      await spectator.goto('/leaderboard/toy-decode');
      await expect.poll(() => spectator.getByTestId('live-indicator').textContent()).toContain('live');
      expect(await spectator.getByTestId('round-clock').count()).toBe(0);

      const org = await browser('clock-organizer');
      await signInThroughForm(org, ORGANIZER);
      await org.goto('/admin');
      const card = org.getByTestId('admin-benchmark').filter({ hasText: 'toy-decode' });
      await card.getByTestId('round-clock-admin').locator('summary').click();
      const local = (ms: number) => {
        const d = new Date(Date.now() + ms);
        return new Date(d.getTime() - d.getTimezoneOffset() * 60_000).toISOString().slice(0, 16);
      };
      await card.getByLabel('Round name').fill('Round 1');
      await card.getByLabel('starts').fill(local(-3600_000));
      // Two minutes short of two days: the page's clock follows the hub's time as of the message that
      // carried it, so on a busy machine it runs up to the message's delay behind, and an end exactly
      // two days out (less only the seconds the minute field drops) could still read "2d 00:00:00".
      await card.getByLabel('ends').fill(local(2 * 86400_000 - 120_000));
      await card.getByRole('button', { name: 'Save round' }).click();
      await card.getByText('Round clock saved').waitFor();

      // Live, without a reload: the round and a ticking countdown.
      const clock = spectator.getByTestId('round-clock');
      await clock.getByText('Round 1').waitFor({ timeout: 15_000 });
      const first = await spectator.getByTestId('countdown').textContent();
      await expect
        .poll(() => spectator.getByTestId('countdown').textContent(), { timeout: 5_000 })
        .not.toBe(first);
      expect(first).toMatch(/^1d 23:\d\d:\d\d$/);

      await card.getByLabel('Action').selectOption('close');
      await card.getByLabel('at', { exact: true }).fill(local(3 * 3600_000));
      await card.getByLabel('Reason').fill('Round 1 deadline');
      await card.getByRole('button', { name: 'Schedule' }).click();
      await card.getByText('1 scheduled').waitFor();
      await shot(org, 'organizer-06-round-clock-admin');
      await spectator.getByTestId('scheduled-action').waitFor({ timeout: 15_000 });
      expect(await spectator.getByTestId('scheduled-action').textContent()).toContain(
        'Submissions and evaluations close automatically',
      );
      expect(await clock.textContent()).toContain('Submissions open');
      await shot(spectator, 'organizer-07-round-clock-leaderboard');
      expect(pageErrors).toEqual([]);
    },
  );

  it(
    'the console shows a scheduled close when it happens; lifting a ban without a reason says so beside it',
    { timeout: 120_000 },
    async () => {
      const api = await signIn(hub, ORGANIZER);
      const org = await browser('schedule-fires');
      const dialogs: string[] = [];
      org.on('dialog', (d) => {
        dialogs.push(d.message());
        void d.dismiss();
      });
      await signInThroughForm(org, ORGANIZER);
      await org.goto('/admin');
      const card = org.getByTestId('admin-benchmark').filter({ hasText: 'toy-decode' });
      const toggle = card.getByLabel('Submissions open');
      expect(await toggle.isChecked()).toBe(true);
      const at = new Date(Date.now() + 3_000).toISOString();
      const scheduled = await api.post('/api/admin/benchmarks/toy-decode/schedule', {
        action: 'close',
        target: 'submissions',
        at,
        reason: 'e2e: a close that fires',
      });
      expect(scheduled.status, JSON.stringify(scheduled.body)).toBe(201);
      // no reload: the switch follows the scheduled close
      await expect.poll(() => toggle.isChecked(), { timeout: 40_000 }).toBe(false);
      expect((await api.patch('/api/admin/benchmarks/toy-decode', { submissionsOpen: true })).status).toBe(
        200,
      );
      await expect.poll(() => toggle.isChecked(), { timeout: 10_000 }).toBe(true);

      const ban = await api.post('/api/admin/bans', {
        user: 'ann-e2e',
        benchmarkId: 'qwen3-4b-decode',
        reason: 'e2e lift',
      });
      expect(ban.status, JSON.stringify(ban.body)).toBe(201);
      await org.goto('/admin/bans');
      const row = org.locator('tr').filter({ hasText: 'e2e lift' });
      await row.getByTestId('lift-ban').click();
      await row.getByTestId('lift-error').getByText('Say why you lift the ban').waitFor();
      expect(dialogs).toEqual([]);
      await row.getByLabel('Why lift').fill('e2e: done');
      await row.getByTestId('lift-ban').click();
      await row.getByText('lifted by').waitFor();
      expect(pageErrors).toEqual([]);
    },
  );

  it(
    'queues a baseline re-measure from the console and shows its status until it writes the cache',
    { timeout: 120_000 },
    async () => {
      // A registered CPU agent (its capabilities as it reported them) makes "cpu" a known key.
      const api = await signIn(hub, ORGANIZER);
      const created = await api.post('/api/admin/agents', { name: 'console-cpu' });
      await hub.dataSource.query(`UPDATE agents SET capabilities = $2 WHERE id = $1`, [
        created.body.id,
        {
          accelerator: 'cpu',
          gpuModel: null,
          gpuCount: 0,
          driver: null,
          harnessVersion: 't',
          agentVersion: 't',
          benchmarks: [],
        },
      ]);
      const org = await browser('baselines-organizer');
      await signInThroughForm(org, ORGANIZER);
      await org.goto('/admin');
      const card = org.getByTestId('admin-benchmark').filter({ hasText: 'toy-decode' });
      const admin = card.getByTestId('baselines-admin');
      await admin.locator('summary').click();
      await admin.getByLabel('Why re-measure').fill('new CPU microcode');
      await admin.getByRole('button', { name: 'Re-measure baseline' }).click();
      await admin.getByText('Re-measure queued').waitFor();
      const row = admin.getByTestId('remeasures').locator('tbody tr').first();
      expect(await row.textContent()).toMatch(/cpu\s*10\s*queued\s*olga-org/);
      await admin.getByText('re-measuring').waitFor();

      const runId = (await api.get('/api/admin/benchmarks/toy-decode/baselines')).body.remeasures[0].runId;
      const agent = new TestAgent(hub, 'console-cpu');
      await agent.claim(runId);
      const fig = { totalMs: 50, ttftMs: 4, tpotMs: 2 };
      await agent.finish(runId, {
        status: 'succeeded',
        failureCode: null,
        message: 'Baseline re-measured',
        score: null,
        baseline: {
          hardware: 'cpu',
          samples: 10,
          workloads: Object.fromEntries(['short', 'long', 'h-wide', 'h-deep'].map((w) => [w, fig])),
        },
      });
      // The open console polls while one is under way: it turns succeeded and the cache lists cpu.
      await row.getByText('succeeded').waitFor({ timeout: 15_000 });
      await admin.locator('summary').getByText('cpu').first().waitFor();

      // A calibration of K from the same card: queued, then its pairs shown as the key's K.
      await admin.getByTestId('calibration-none').waitFor();
      const form = admin.getByTestId('calibrate-form');
      await form.getByLabel('budget s/part').fill('60');
      await admin.getByLabel('Why calibrate').fill('first K for the CPU key');
      await admin.getByRole('button', { name: 'Calibrate K' }).click();
      await admin.getByText('Calibration queued (1 run)').waitFor();
      const cal = (await api.get('/api/admin/benchmarks/toy-decode/baselines')).body.remeasures.find(
        (r: { mode: string }) => r.mode === 'calibration',
      );
      expect(cal).toMatchObject({ status: 'queued', part: 1, calibrate: { budgetSeconds: 60 } });
      await agent.claim(cal.runId);
      await agent.finish(cal.runId, {
        status: 'succeeded',
        message: 'Calibrated',
        calibration: {
          hardware: 'cpu',
          pairs: 6,
          seconds: 48,
          halfWidthPct: 1.5,
          workloads: Object.fromEntries(
            ['short', 'long', 'h-wide', 'h-deep'].map((w) => [w, { ratios: [2, 2.02, 1.98, 2.01, 1.99, 2] }]),
          ),
        },
      });
      const k = admin.getByTestId('calibration-row');
      await k.waitFor({ timeout: 15_000 });
      expect(await k.textContent()).toMatch(/cpu\s*v1\s*.*short 2\.000.*±\d\.\d+ %\s*6\s*1\s*0\.8/);
      await shot(org, 'organizer-08-baselines-admin');
      expect(pageErrors).toEqual([]);
    },
  );

  it(
    "reads a team's submitted code in the browser, highlighted and read only, downloads it, and finds both in the audit log",
    { timeout: 120_000 },
    async () => {
      const submissionId = (await ann.get(`/api/runs/${runs.ann}`)).body.submissionId as string;
      const org = await browser('code');
      await signInThroughForm(org, ORGANIZER);
      await org.goto('/admin/runs');
      await org.locator(`a[href="/submissions/${submissionId}/code"]`).first().click();
      await org.getByTestId('code-title').waitFor();
      expect(await org.getByTestId('code-title').textContent()).toContain('ann #1');
      await org.getByTestId('code-audited').waitFor();
      expect(await org.getByTestId('code-path').textContent()).toBe('engine.py');
      const source = org.getByTestId('code-source');
      expect(await source.textContent()).toContain('class Engine');
      // highlighted: keywords and the class's name are tokens of their own
      expect(await source.locator('.tok-keyword', { hasText: /^class$/ }).count()).toBeGreaterThan(0);
      expect(await source.locator('.tok-name', { hasText: /^Engine$/ }).count()).toBeGreaterThan(0);
      await shot(org, 'organizer-09-submission-code');
      const [download] = await Promise.all([
        org.waitForEvent('download'),
        org.getByTestId('code-download').click(),
      ]);
      expect(download.suggestedFilename()).toBe('ann-1.tar.gz');
      const saved = await download.path();
      expect(readFileSync(saved!).equals(await toyStarter())).toBe(true);

      await org.goto('/admin/audit');
      await org.locator('td', { hasText: 'submission.download' }).first().waitFor();
      const entries = (
        await hub.http.get(`/api/admin/audit?target=${submissionId}`).set('Cookie', await orgCookie())
      ).body.items.map((e: { action: string; actor: { login: string } }) => [e.action, e.actor.login]);
      expect(entries).toEqual([
        ['submission.download', ORGANIZER],
        ['submission.view_code', ORGANIZER],
      ]);
      expect(pageErrors).toEqual([]);
    },
  );

  it(
    'refunds a run and grants extra runs from All runs; the team sees both in its quota',
    { timeout: 120_000 },
    async () => {
      const org = await browser('quota');
      await signInThroughForm(org, ORGANIZER);
      await org.goto('/admin/runs');
      const row = org.locator('tr', { has: org.locator(`a[href="/runs/${runs.ann}"]`) });
      await row.getByTestId('admin-run-refund').click();
      await org.locator('#q-reason').fill('the agent lost half the run');
      await org.getByTestId('quota-submit').click();
      await org.getByTestId('quota-done').waitFor();
      await row.getByTestId('admin-run-refunded').waitFor();
      await row.getByTestId('admin-run-grant').click();
      await org.locator('#q-bucket').selectOption('public');
      await org.locator('#q-extra').fill('2');
      await org.locator('#q-reason').fill('two more public runs for the demo');
      await org.getByTestId('quota-submit').click();
      await org
        .getByTestId('quota-done')
        .filter({ hasText: 'Granted 2 extra public runs of toy-decode today to Fast Decoders' })
        .waitFor();
      await shot(org, 'organizer-10-quota-grant');

      const quota = (await ann.get('/api/quota?benchmark=toy-decode')).body as {
        bucket: string;
        granted: number;
        refunded: number;
      }[];
      expect(quota.find((q) => q.bucket === 'public')).toMatchObject({ granted: 2 });
      expect(quota.find((q) => q.bucket === 'official')).toMatchObject({ refunded: 1 });
      const audit = (await hub.http.get('/api/admin/audit').set('Cookie', await orgCookie())).body.items.map(
        (e: { action: string }) => e.action,
      );
      expect(audit.slice(0, 2)).toEqual(['quota.grant', 'run.refund']);
      expect(pageErrors).toEqual([]);
    },
  );

  it(
    "notifies the open tab when a team run ends, and posts the signed run.finished to the owner's webhook",
    { timeout: 120_000 },
    async () => {
      // A small real HTTP receiver for the webhook.
      const received: { headers: Record<string, unknown>; body: string }[] = [];
      const server = createServer((req, res) => {
        const chunks: Buffer[] = [];
        req.on('data', (c: Buffer) => chunks.push(c));
        req.on('end', () => {
          received.push({ headers: req.headers, body: Buffer.concat(chunks).toString('utf8') });
          res.writeHead(204).end();
        });
      });
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      const hookUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/dryft`;
      try {
        const { owner: nina } = await ownerWithTeam(hub, 'nina-e2e', 'Night Owls');
        const page = await browser('notify', ['notifications']);
        // Record what the page shows through the browser's Notification API.
        await page.context().addInitScript(() => {
          const w = window as unknown as {
            __notes: { title: string; body?: string }[];
            Notification: typeof Notification;
          };
          w.__notes = [];
          const Real = w.Notification;
          const Spy = function (this: unknown, title: string, options?: NotificationOptions) {
            w.__notes.push({ title, body: options?.body });
            return new Real(title, options);
          } as unknown as typeof Notification;
          Object.defineProperty(Spy, 'permission', { get: () => Real.permission });
          Spy.requestPermission = Real.requestPermission.bind(Real);
          w.Notification = Spy;
        });
        await signInThroughForm(page, 'nina-e2e');

        await page.goto('/team');
        const hooks = page.getByTestId('team-webhooks');
        await hooks.locator('#hook-url').fill(hookUrl);
        await hooks.getByRole('button', { name: 'Add webhook' }).click();
        const secret = (await page.getByTestId('webhook-secret').locator('code').textContent())!.trim();
        expect(secret).toMatch(/^whsec_/);
        await hooks.getByTestId('webhook').getByText(hookUrl).waitFor();

        await page.goto('/runs');
        await page.getByTestId('notify-toggle').check();
        await expect.poll(() => page.getByTestId('notify-toggle').isChecked()).toBe(true);
        await shot(page, 'notify-01-runs-opt-in');

        const up = await nina.upload(
          '/api/submissions',
          { benchmark: 'toy-decode' },
          { name: 'owl.tar.gz', content: await toyStarter() },
        );
        const run = (await nina.post(`/api/submissions/${up.body.submission.id}/runs`, { mode: 'public' }))
          .body.run;
        await new TestAgent(hub).complete(run.id, 123.4);

        await expect
          .poll(() => page.evaluate(() => (window as unknown as { __notes: { title: string }[] }).__notes), {
            timeout: 15_000,
          })
          .toEqual([
            {
              title: `Run ${run.id.slice(0, 8)} succeeded`,
              body: 'owl #1 · public · toy-decode · 123.4 points',
            },
          ]);

        await expect.poll(() => received.length, { timeout: 20_000 }).toBe(1);
        const signature = `sha256=${createHmac('sha256', secret).update(received[0].body).digest('hex')}`;
        expect(received[0].headers['x-hub-signature-256']).toBe(signature);
        expect(JSON.parse(received[0].body)).toMatchObject({
          event: 'run.finished',
          run: { id: run.id, status: 'succeeded' },
        });

        await page.goto('/team');
        await page.getByTestId('webhook').getByRole('button', { name: 'Deliveries' }).click();
        await page.getByTestId('webhook-deliveries').getByText('succeeded').waitFor();
        await shot(page, 'notify-02-team-webhook-deliveries');
        expect(pageErrors).toEqual([]);
      } finally {
        await new Promise((resolve) => server.close(resolve));
      }
    },
  );

  async function orgCookie(): Promise<string> {
    return (await signIn(hub, ORGANIZER)).cookie;
  }
});
