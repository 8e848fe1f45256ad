import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { chromium, type BrowserContext } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { teamToken } from '../support/cli';
import { ROOT, startTestHub, type TestHub } from '../support/hub';
import { hasChromium } from '../support/prerequisites';
import { TestAgent } from '../support/test-agent';

/**
 * The decode page's CLI commands, followed literally (issue 31, "the starter knows its hub"): on a
 * hub listening on a port other than 3000, the commands are read from the page in Chromium and run
 * in sh in an empty folder, with only the token placeholder and the printed submission ID filled
 * in, and no DRYFT_API_URL: the template the page downloads names its hub, the installer installs
 * from that hub, and ./bin/dryft doctor, validate, submit and run talk to it. The same token sent
 * to another hub is refused as belonging to another hub. Needs the built web app and CLI bundle.
 */
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const WEB_BUILD = path.join(ROOT, 'apps/web/build/200.html');
const BUNDLE = path.join(ROOT, 'apps/cli/dist/dryft.cjs');

function sh(
  script: string,
  cwd: string,
  env: NodeJS.ProcessEnv,
): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve) => {
    const child = spawn('sh', ['-ec', script], { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString()));
    child.stderr.on('data', (c: Buffer) => (out += c.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), 90_000);
    child.once('close', (code) => {
      clearTimeout(timer);
      resolve({ code, out });
    });
  });
}

describe.skipIf(!hasChromium())(
  "the decode page's CLI commands, literally, on a hub not on port 3000",
  () => {
    let hub: TestHub;
    let other: TestHub;
    let ctx: BrowserContext;
    const dirs: string[] = [];

    beforeAll(async () => {
      for (const f of [WEB_BUILD, BUNDLE])
        if (!existsSync(f))
          throw new Error(`${path.relative(ROOT, f)} is missing: run \`npm run build\` first.`);
      hub = await startTestHub();
      other = await startTestHub();
      expect(new URL(hub.baseUrl).port).not.toBe('3000');
    });

    afterAll(async () => {
      await ctx?.close().catch(() => undefined);
      await hub?.close();
      await other?.close();
      for (const d of dirs) rmSync(d, { recursive: true, force: true });
    });

    it('template, installer, doctor, validate, submit and run against the hub the page came from', async () => {
      const profile = mkdtempSync(path.join(tmpdir(), 'dryft-e2e-page-cli-'));
      dirs.push(profile);
      ctx = await chromium.launchPersistentContext(profile, {
        executablePath: CHROMIUM,
        headless: true,
        args: ['--headless', '--no-sandbox', '--disable-gpu'],
        baseURL: hub.baseUrl,
      });
      const page = ctx.pages()[0] ?? (await ctx.newPage());
      await page.goto('/benchmarks/toy-decode');
      await page.getByTestId('decode-page').waitFor();
      const block = async (id: string) => (await page.getByTestId(id).locator('pre').textContent()) ?? '';
      const [template, install, first] = [
        await block('code-template'),
        await block('code-install'),
        await block('code-first'),
      ];
      expect(template).toContain(hub.baseUrl);

      const { token } = await teamToken(hub.baseUrl, 'cleo-page-cli');
      const work = mkdtempSync(path.join(tmpdir(), 'dryft-page-cli-'));
      dirs.push(work);
      const env: NodeJS.ProcessEnv = { PATH: process.env.PATH, HOME: work, NO_COLOR: '1' };
      // The template and install blocks as the page shows them, the token being the reader's own.
      const setup = await sh(`${template}\n${install.replace('dryft_pat_REPLACE_ME', token)}`, work, env);
      expect(setup.out).toContain(`Downloading the dryft CLI from ${hub.baseUrl}`);
      expect(setup.out).toMatch(/token valid/);
      expect(setup.code, setup.out).toBe(0);
      const repo = path.join(work, 'toy-decode');
      expect(JSON.parse(readFileSync(path.join(repo, 'dryft.json'), 'utf8')).hub).toBe(hub.baseUrl);
      expect(readFileSync(path.join(repo, 'bin/dryft-hub.txt'), 'utf8').trim()).toBe(hub.baseUrl);

      const withToken = { ...env, DRYFT_TOKEN: token };
      const [validate, submit, run] = first.split('\n');
      const v = await sh(validate, repo, withToken);
      expect(v.code, v.out).toBe(0);
      const s = await sh(submit, repo, withToken);
      expect(s.code, s.out).toBe(0);
      const submissionId = s.out.match(/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/)?.[0];
      expect(submissionId, s.out).toBeTruthy();
      expect(run).toMatch(/^\.\/bin\/dryft run SUBMISSION_ID --mode public --wait \d+$/);
      const running = sh(run.replace('SUBMISSION_ID', submissionId!), repo, withToken);
      // An agent takes the run the CLI started and finishes it.
      const agent = new TestAgent(hub);
      let runId: string | undefined;
      await expect
        .poll(
          async () => {
            const res = await hub.http.get('/api/runs').set('Authorization', `Bearer ${token}`);
            runId = (res.body.items as { id: string }[] | undefined)?.[0]?.id;
            return runId;
          },
          { timeout: 20_000 },
        )
        .toBeTruthy();
      await agent.complete(runId!, 101.5);
      const r = await running;
      expect(r.code, r.out).toBe(0);
      expect(r.out).toContain('succeeded');

      // The same token on another hub: refused as another hub's, not as a bad token.
      const wrong = await sh('./bin/dryft doctor', repo, { ...withToken, DRYFT_API_URL: other.baseUrl });
      expect(wrong.code).not.toBe(0);
      expect(wrong.out).toContain('This token belongs to another hub (');
      expect(wrong.out).toContain(`The hub here is ${other.baseUrl}`);
      expect(wrong.out).not.toContain('was copied fully');
    });
  },
);
