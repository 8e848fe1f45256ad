import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { toyStarter } from '../support/archives';
import { busyCheckers } from '../support/busy-checkers';
import { ROOT, startTestHub, type TestHub } from '../support/hub';
import { CHROMIUM, hasChromium } from '../support/prerequisites';
import { ownerWithTeam, type TestUser } from '../support/users';

/**
 * Issue 30: the web honours 503 `checker_busy` in Chromium. An upload on the Submissions page while
 * every upload checker is busy shows "The hub is busy checking uploads; retrying in N s.", is sent
 * again after the Retry-After with the same Idempotency-Key, and is stored once; the notice goes.
 * The real API serves the built app.
 */
const WEB_BUILD = path.join(ROOT, 'apps/web/build/200.html');

describe.skipIf(!hasChromium() || !existsSync(WEB_BUILD))(
  'the web while every upload checker is busy',
  () => {
    let hub: TestHub;
    let owner: TestUser;
    let ctx: BrowserContext;
    let page: Page;
    let dir: string;

    beforeAll(async () => {
      hub = await startTestHub({ env: { UPLOAD_CHECK_WORKERS: '1', UPLOAD_CHECK_QUEUE: '0' } });
      ({ owner } = await ownerWithTeam(hub, 'busy-web'));
      dir = mkdtempSync(path.join(tmpdir(), 'dryft-e2e-busy-'));
      ctx = await chromium.launchPersistentContext(dir, {
        executablePath: CHROMIUM,
        headless: true,
        args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run'],
        baseURL: hub.baseUrl,
      });
      await ctx.addCookies(
        owner.cookie.split('; ').map((kv) => {
          const i = kv.indexOf('=');
          return { name: kv.slice(0, i), value: kv.slice(i + 1), url: hub.baseUrl };
        }),
      );
      page = ctx.pages()[0] ?? (await ctx.newPage());
    });
    afterAll(async () => {
      await ctx?.close();
      await hub?.close();
      if (dir) rmSync(dir, { recursive: true, force: true });
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
