import { existsSync } from 'node:fs';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { toyStarter } from '../support/archives';
import { busyCheckers } from '../support/busy-checkers';
import { BrowserProfiles, WEB_BUILD } from '../support/browser';
import { startTestHub, type TestHub } from '../support/hub';
import { hasChromium } from '../support/prerequisites';
import { ownerWithTeam, type TestUser } from '../support/users';

/**
 * Issue 30: the web honours 503 `checker_busy` in Chromium. An upload on the Submissions page while
 * every upload checker is busy shows "The hub is busy checking uploads; retrying in N s.", is sent
 * again after the Retry-After with the same Idempotency-Key, and is stored once; the notice goes.
 * The real API serves the built app.
 */
describe.skipIf(!hasChromium() || !existsSync(WEB_BUILD))(
  'the web while every upload checker is busy',
  () => {
    let hub: TestHub;
    let owner: TestUser;
    const profiles = new BrowserProfiles('dryft-e2e-busy-');
    let page: Page;

    beforeAll(async () => {
      hub = await startTestHub({ env: { UPLOAD_CHECK_WORKERS: '1', UPLOAD_CHECK_QUEUE: '0' } });
      ({ owner } = await ownerWithTeam(hub, 'busy-web'));
      // Playwright's own default viewport: nothing here depends on the page's width.
      page = await profiles.openPage('owner', {
        baseURL: hub.baseUrl,
        viewport: { width: 1280, height: 720 },
        cookie: owner.cookie,
      });
    });
    afterAll(async () => {
      await profiles.closeAll();
      await hub?.close();
    });

    it('says it is retrying, sends the upload again after the Retry-After and stores it once', async () => {
      const uploads: { status: number; key: string | null }[] = [];
      page.on('response', async (res) => {
        if (res.url().endsWith('/api/submissions') && res.request().method() === 'POST')
          uploads.push({
            status: res.status(),
            key: (await res.request().allHeaders())['idempotency-key'] ?? null,
          });
      });
      await page.goto('/submissions?benchmark=toy-decode');
      await page.getByTestId('file-input').setInputFiles({
        name: 'submission.tar.gz',
        mimeType: 'application/gzip',
        buffer: await toyStarter(),
      });
      await page.getByText('all rules pass').first().waitFor();
      const busy = busyCheckers(hub, 1, 2);
      try {
        await page.getByTestId('upload').click();
        const notice = page.getByTestId('retry-notice');
        await notice.waitFor();
        expect((await notice.textContent())!.trim()).toBe(
          'The hub is busy checking uploads; retrying in 2 s.',
        );
        await page.getByTestId('upload-done').waitFor();
        await notice.waitFor({ state: 'detached' });
      } finally {
        busy.restore();
      }
      expect(busy.refused()).toBe(1);
      await expect.poll(() => uploads.length).toBe(2);
      expect(uploads.map((u) => u.status)).toEqual([503, 201]);
      expect(uploads[0].key).toBeTruthy();
      expect(uploads[1].key).toBe(uploads[0].key);
      expect((await owner.get('/api/submissions?limit=100')).body.items).toHaveLength(1);
    });
  },
);
