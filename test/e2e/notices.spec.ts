import { mkdirSync } from 'node:fs';
import * as path from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EventBus } from '../../apps/api/src/common/event-bus';
import { toyStarter } from '../support/archives';
import { BrowserProfiles, recordPageErrors, requireBuiltWebApp, SCREENSHOTS } from '../support/browser';
import { startTestHub, type TestHub } from '../support/hub';
import { hasChromium } from '../support/prerequisites';
import { ownerWithTeam, signIn, type TestUser } from '../support/users';

/**
 * Benchmark notices in Chromium (issue 33 item 6), on the built web app served by the real API on
 * real Postgres: an organizer schedules a close inside ROUND_CLOSING_NOTICE_MINUTES and a
 * spectator's open leaderboard, a participant's team page (with browser notifications on) and a
 * benchmark page opened afterwards all show "Round closes in …"; canceling the close takes the
 * banners away live; the final board's publication shows its banner and link. Any console error
 * fails the test. Screenshot: test/e2e/screenshots/notice-round-closing.png.
 */
const ORGANIZER = 'org-notices-e2e';

describe.skipIf(!hasChromium())('benchmark notices in the web', () => {
  let hub: TestHub;
  let organizer: TestUser;
  let owner: TestUser;
  const profiles = new BrowserProfiles('dryft-e2e-');
  const consoleErrors: string[] = [];

  async function browserAs(user: TestUser | null, label: string): Promise<Page> {
    const ctx = await profiles.open(label, {
      baseURL: hub.baseUrl,
      permissions: ['notifications'],
      cookie: user?.cookie,
    });
    // Notifications the page shows, recorded (headless Chromium draws none).
    await ctx.addInitScript(() => {
      const shown: { title: string; body?: string }[] = [];
      (window as unknown as { shownNotifications: typeof shown }).shownNotifications = shown;
      class Recorded {
        static permission = 'granted';
        static requestPermission = async () => 'granted';
        onclick: (() => void) | null = null;
        constructor(title: string, opts?: { body?: string }) {
          shown.push({ title, body: opts?.body });
        }
      }
      (window as unknown as { Notification: unknown }).Notification = Recorded;
    });
    const page = await ctx.newPage();
    recordPageErrors(page, label, consoleErrors);
    return page;
  }

  beforeAll(async () => {
    requireBuiltWebApp();
    mkdirSync(SCREENSHOTS, { recursive: true });
    hub = await startTestHub({
      // The webhook the owner adds points at loopback (nothing listens: its deliveries stay pending).
      env: {
        ADMIN_LOGINS: ORGANIZER,
        ROUND_CLOSING_NOTICE_MINUTES: '60',
        OUTGOING_WEBHOOK_ALLOW_PRIVATE: 'true',
      },
    });
    organizer = await signIn(hub, ORGANIZER);
    ({ owner } = await ownerWithTeam(hub, 'nia-notices-e2e', 'Notice Readers'));
    const up = await owner.upload(
      '/api/submissions',
      { benchmark: 'toy-decode' },
      { name: 'e.tar.gz', content: await toyStarter() },
    );
    expect(up.status).toBe(201);
  });

  afterAll(async () => {
    await profiles.closeAll();
    await hub?.close();
  });

  it(
    'shows a closing round on the leaderboard, team and benchmark pages, live, and the final board',
    { timeout: 120_000 },
    async () => {
      const spectator = await browserAs(null, 'spectator');
      await spectator.goto('/leaderboard/toy-decode');
      await spectator.getByTestId('round-clock').or(spectator.locator('h1')).first().waitFor();
      const member = await browserAs(owner, 'member');
      await member.goto('/team');
      await member.getByTestId('team-name').waitFor();
      await member.evaluate(() => localStorage.setItem('dryft:notify-run-end', '1'));
      await member.reload();
      await member.getByTestId('team-name').waitFor();
      // The owner subscribes a webhook to the closing notice too.
      const hooks = member.getByTestId('team-webhooks');
      await hooks.locator('#hook-url').fill('http://127.0.0.1:9/dryft');
      await hooks.getByTestId('webhook-event').and(member.locator('[value="round.closing"]')).check();
      await hooks.getByRole('button', { name: 'Add webhook' }).click();
      await hooks.getByTestId('webhook').getByText('run.finished, round.closing').waitFor();
      // The pages joined /live before the notice goes out.
      await new Promise((r) => setTimeout(r, 1000));

      // 10 min 50 s ahead: "10 min" (rounded down) for the next 50 s.
      const at = new Date(Date.now() + 10 * 60_000 + 50_000);
      const close = await organizer.post('/api/admin/benchmarks/toy-decode/schedule', {
        action: 'close',
        at: at.toISOString(),
      });
      expect(close.status).toBe(201);
      const hm = `${String(at.getUTCHours()).padStart(2, '0')}:${String(at.getUTCMinutes()).padStart(2, '0')} UTC`;
      const banner = (page: Page) =>
        page.getByTestId('benchmark-notice').filter({ hasText: 'Round closes in' });
      await banner(spectator).waitFor({ timeout: 20_000 });
      expect(await banner(spectator).textContent()).toContain(
        `Round closes in 10 min: official runs started after ${hm} are refused (public runs and uploads too).`,
      );
      await banner(member).waitFor({ timeout: 20_000 });
      expect(await banner(member).textContent()).toMatch(
        /^.+: Round closes in 10 min: official runs started after/,
      );
      await expect
        .poll(() =>
          member.evaluate(
            () => (window as unknown as { shownNotifications: { title: string }[] }).shownNotifications,
          ),
        )
        .toEqual([expect.objectContaining({ title: expect.stringMatching(/: round closes in 10 min$/) })]);

      await hooks.getByTestId('webhook').getByRole('button', { name: 'Deliveries' }).click();
      await hooks.getByTestId('webhook-deliveries').getByText('round.closing').waitFor();

      // A page opened after the notice went out shows it too (from the clock).
      const late = await browserAs(null, 'late');
      await late.goto('/benchmarks/toy-decode');
      await banner(late).waitFor({ timeout: 20_000 });
      await spectator.screenshot({
        path: path.join(SCREENSHOTS, 'notice-round-closing.png'),
        fullPage: true,
      });

      // Canceled: every banner goes, live.
      expect((await organizer.delete(`/api/admin/schedule/${close.body.id}?reason=extended`)).status).toBe(
        200,
      );
      for (const page of [spectator, member, late])
        await banner(page).waitFor({ state: 'detached', timeout: 20_000 });

      hub.app
        .get(EventBus)
        .emit('leaderboard.final_published', { benchmarkId: 'toy-decode', publishedAt: Date.now() });
      const published = spectator
        .getByTestId('benchmark-notice')
        .filter({ hasText: 'The final board is published.' });
      await published.waitFor({ timeout: 20_000 });
      expect(await published.getByRole('link', { name: 'See the final board' }).getAttribute('href')).toBe(
        '/leaderboard/toy-decode?board=final',
      );
      await member
        .getByTestId('benchmark-notice')
        .filter({ hasText: 'The final board is published.' })
        .waitFor();
      await published.getByRole('button', { name: 'Dismiss' }).click();
      await published.waitFor({ state: 'detached' });
      expect(consoleErrors).toEqual([]);
    },
  );

  it(
    'moves a close from the organizer console: the teams are told the new time',
    { timeout: 120_000 },
    async () => {
      const far = new Date(Date.now() + 3 * 3600_000).toISOString();
      const close = await organizer.post('/api/admin/benchmarks/toy-decode/schedule', {
        action: 'close',
        at: far,
      });
      expect(close.status).toBe(201);
      const spectator = await browserAs(null, 'move-spectator');
      await spectator.goto('/leaderboard/toy-decode');
      await spectator.getByTestId('scheduled-action').waitFor({ timeout: 15_000 });
      const banner = spectator.getByTestId('benchmark-notice').filter({ hasText: 'Round closes in' });
      expect(await banner.count()).toBe(0);

      const org = await browserAs(organizer, 'move-organizer');
      await org.goto('/admin');
      const card = org.getByTestId('admin-benchmark').filter({ hasText: 'toy-decode' });
      await card.getByTestId('round-clock-admin').locator('summary').click();
      const row = card.getByTestId('scheduled-admin');
      expect(await row.textContent()).toContain('teams not told yet');
      // datetime-local is to the minute: 20 min ahead, in the browser's own zone.
      const soon = new Date(Date.now() + 20 * 60_000);
      const local = new Date(soon.getTime() - soon.getTimezoneOffset() * 60_000).toISOString().slice(0, 16);
      await row.getByLabel('Move to').fill(local);
      const movedAt = Date.now();
      await row.getByRole('button', { name: 'Move' }).click();
      await card.getByText('Moved; the teams are told the new time when it is near.').waitFor();
      await banner.waitFor({ timeout: 20_000 });
      const text = (await banner.textContent()) ?? '';
      // The new close is the minute `local` names: 19 to 20 min after the fill. The banner counts
      // whole minutes left from the moment its notice arrived (between the click and now), so under
      // load a fill late in a minute reads 18: expect what that moment allows, not a fixed 19 or 20.
      const closesAt = new Date(`${local}:00`).getTime();
      const fewest = Math.floor((closesAt - Date.now()) / 60_000);
      const most = Math.floor((closesAt - movedAt) / 60_000);
      const shown = /Round closes in (\d+) min: official runs started after \d\d:\d\d UTC/.exec(text);
      expect(shown, text).not.toBeNull();
      expect(Number(shown![1]), text).toBeGreaterThanOrEqual(fewest);
      expect(Number(shown![1]), text).toBeLessThanOrEqual(most);
      expect(most, 'the close moved to 19-20 min ahead').toBeGreaterThanOrEqual(18);
      await expect.poll(() => row.textContent(), { timeout: 15_000 }).toContain('teams told');
      const moved = (await organizer.get('/api/admin/schedule?benchmark=toy-decode')).body.find(
        (x: { id: string }) => x.id === close.body.id,
      );
      expect(new Date(moved.at).getTime()).toBe(new Date(`${local}:00`).getTime());
      await organizer.delete(`/api/admin/schedule/${close.body.id}`);
      await banner.waitFor({ state: 'detached', timeout: 20_000 });
      expect(consoleErrors).toEqual([]);
    },
  );
});
