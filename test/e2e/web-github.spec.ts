import { randomUUID } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import * as path from 'node:path';
import { gunzipSync } from 'node:zlib';
import { readTar } from '@dryft/libs';
import type { Page } from 'playwright-core';
import { hasChromium } from '../support/prerequisites';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { appKeys, APP_ID, githubAppEnv, pushPayload, sign } from '../support/github-app';
import type { StandinRepo } from '../support/github-app-standin';
import { startGithubStandin, type GithubStandin } from '../support/github-standin';
import {
  BrowserProfiles,
  CHROMIUM_ARGS_NO_EXTRA_TRAFFIC,
  recordPageErrors,
  requireBuiltWebApp,
  SCREENSHOTS,
} from '../support/browser';
import { ROOT } from '../support/hub';
import { AGENT_MAIN, startQuickstart, waitForLocalAgentOnline, type Quickstart } from '../support/quickstart';

/**
 * Run on push in the browser: the built web app served by the real API process on a fresh
 * database, configured for a GitHub App that the local GitHub stand-in plays (RSA key made here;
 * the stand-in checks the hub's JWTs with it and serves the commit tarballs), and the local agent
 * running toy-decode. A new user signs in, creates a team, downloads the starter template,
 * connects a repository through the install redirect, and pushes: the signed push webhook (GitHub's
 * own example payload, moved to this repository) shows as succeeded in Check delivery, and its run
 * streams its log live until it succeeds. Run now starts one more run. Any console error fails.
 */
const ORGANIZER = 'org-gh-e2e';
const INSTALLATION = 9101;
const REPO = 'octo/fast-qwen';

let baseUrl = '';
let quickstart: Quickstart | undefined;
let standin: GithubStandin | undefined;
const profiles = new BrowserProfiles('dryft-e2e-github-', CHROMIUM_ARGS_NO_EXTRA_TRAFFIC);
const consoleErrors: string[] = [];

const shot = (page: Page, name: string) =>
  page.screenshot({ path: path.join(SCREENSHOTS, `web-github-${name}.png`), fullPage: true });

/** A fresh browser profile (its own cookies: its own user). */
async function browser(label: string): Promise<Page> {
  const ctx = await profiles.open(label, {
    baseURL: baseUrl,
    acceptDownloads: true,
  });
  // Chromium logs every failed fetch as a console error: any error fails the test. Every page the
  // profile opens (this one, popups) is watched.
  ctx.on('page', (p) => recordPageErrors(p, label, consoleErrors));
  return ctx.newPage();
}

/** The files of a "Download template" archive, without its top folder. */
function templateFiles(tgz: Buffer): Record<string, Buffer> {
  const files: Record<string, Buffer> = {};
  readTar(gunzipSync(tgz), (e) => {
    if (e.type !== 'file') return;
    files[e.name.split('/').slice(1).join('/')] = Buffer.from(e.content);
  });
  return files;
}

/** A push delivery the way GitHub sends it: raw JSON, event, delivery id, HMAC signature. */
async function deliverPush(payload: object): Promise<{ status: number; body: Record<string, unknown> }> {
  const body = JSON.stringify(payload);
  const res = await fetch(`${baseUrl}/api/github/webhooks`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'user-agent': 'GitHub-Hookshot/e2e',
      'x-github-event': 'push',
      'x-github-delivery': randomUUID(),
      'x-github-hook-installation-target-type': 'integration',
      'x-hub-signature-256': sign(body),
    },
    body,
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

const runStatus = async (page: Page) => ((await page.getByTestId('run-status').textContent()) ?? '').trim();
const logCount = async (page: Page) =>
  Number(((await page.getByTestId('log-count').textContent()) ?? '').replace(/[^0-9]/g, '') || 0);

describe.skipIf(!hasChromium())('web: run on push through the GitHub App', () => {
  beforeAll(async () => {
    requireBuiltWebApp();
    if (!existsSync(AGENT_MAIN))
      throw new Error(
        `${AGENT_MAIN} is missing: run \`npm run build\` first (the local agent runs toy-decode).`,
      );
    mkdirSync(SCREENSHOTS, { recursive: true });
    standin = await startGithubStandin();
    const keys = appKeys();
    standin.app.configure({ appId: APP_ID, publicKey: keys.publicKey });
    quickstart = await startQuickstart({
      env: { ...githubAppEnv(standin, keys.privateKeyPem), ADMIN_LOGINS: ORGANIZER },
    });
    baseUrl = quickstart.url;
    // GitHub's install page sends the browser back to the hub's Setup URL.
    standin.app.setupUrl = `${baseUrl}/api/github/setup`;
    await waitForLocalAgentOnline(baseUrl, ORGANIZER);
  }, 90_000);

  afterAll(async () => {
    await profiles.closeAll();
    await quickstart?.close();
    await standin?.close();
  });

  it(
    'connects a repository, runs a push and Run now, and follows them live',
    { timeout: 150_000 },
    async () => {
      const page = await browser('owner');
      try {
        await journey(page);
      } catch (err) {
        for (const [i, c] of profiles.contexts.entries())
          for (const p of c.pages()) await shot(p, `failure-${i}`).catch(() => undefined);
        throw new Error(
          `${(err as Error).message}\nconsole errors: ${JSON.stringify(consoleErrors)}\nstand-in calls: ${standin!.app.calls.slice(-20).join(', ')}\nhub output (tail): ${`${quickstart!.api.output()}\n${quickstart!.agent?.output() ?? ''}`.slice(-3000)}`,
          { cause: err },
        );
      }
    },
  );
});

async function journey(page: Page): Promise<void> {
  const t0 = Date.now();
  const app = standin!.app;

  // A new user: dev sign-in, then a team of their own.
  await page.goto('/signin');
  await page.getByTestId('dev-login').fill('octo-e2e');
  await page.getByRole('button', { name: 'Sign in', exact: true }).click();
  await page.getByTestId('account-menu').waitFor();
  await page.waitForURL((u) => !u.pathname.startsWith('/signin'));
  await page.getByRole('link', { name: 'Team', exact: true }).click();
  await page.getByTestId('create-team-name').fill('Octo Decoders');
  await page.getByRole('button', { name: 'Create team' }).click();
  await expect.poll(() => page.getByTestId('team-name').textContent()).toBe('Octo Decoders');
  await expect.poll(async () => (await page.getByTestId('invite-code').textContent())?.trim().length).toBe(6);
  const inviteCode = (await page.getByTestId('invite-code').textContent())!.trim();

  // Download template (toy-decode): the starter repository the user would push to GitHub.
  await page.getByRole('link', { name: 'Submissions' }).click();
  await page.getByTestId('starter-download').waitFor();
  if (await page.getByTestId('benchmark-select').count())
    await page.getByTestId('benchmark-select').selectOption('toy-decode');
  await expect
    .poll(() => page.getByTestId('template-download').getAttribute('href'))
    .toBe('/api/benchmarks/toy-decode/template');
  await shot(page, '01-submissions-template');
  const [download] = await Promise.all([
    page.waitForEvent('download'),
    page.getByTestId('template-download').click(),
  ]);
  const tgz = path.join(profiles.folders[0], download.suggestedFilename());
  await download.saveAs(tgz);
  const files = templateFiles(readFileSync(tgz));
  expect(files['engine/engine.py'].toString()).toBe(
    readFileSync(path.join(ROOT, 'starters/toy-decode/engine/engine.py'), 'utf8'),
  );
  expect(Object.keys(files)).toContain('AGENTS.md');

  // On "GitHub": the user's copy of the starter, and the App installed on their account with only it.
  app.addInstallation(INSTALLATION, { login: 'octo', id: 314, type: 'User' });
  const repo: StandinRepo = app.addRepo(REPO, files);
  app.grant(INSTALLATION, repo);
  app.installOnVisit = INSTALLATION;

  // Repositories: Connect a repository goes to GitHub's install page and comes back installed.
  await page.getByRole('link', { name: 'Repositories' }).click();
  await page.getByText('No repository is connected yet').waitFor();
  await shot(page, '02-repositories-empty');
  expect(await page.getByTestId('connect-repository').count()).toBe(1);
  // Connect a repository is on the Submissions page too (where the decode page sends people), same flow.
  await page.getByRole('link', { name: 'Submissions' }).click();
  await page.getByTestId('submissions-connect-repository').click();
  await page.waitForURL(new RegExp(`/repositories\\?installed=${INSTALLATION}$`));
  await page.getByTestId('installed').waitFor();
  const row = page.locator(`[data-testid="granted-repo"][data-repo="${REPO}"]`);
  await row.waitFor();
  await shot(page, '03-installed');

  // Choose the repository: engine folder "engine", benchmark toy-decode.
  await row.getByTestId('new-engine-folder').fill('engine');
  await row.getByTestId('new-benchmark').selectOption('toy-decode');
  await row.getByTestId('connect').click();
  const card = page.locator(`[data-testid="connection"][data-repo="${REPO}"]`);
  await card.waitFor();
  await row.getByText('connected', { exact: true }).waitFor();
  await expect.poll(() => card.getByTestId('auto-run').isChecked()).toBe(true);
  await expect.poll(() => card.getByTestId('evaluation').inputValue()).toBe('public');
  expect(await card.getByText('none yet').count()).toBe(1); // connecting alone ran nothing
  await page.waitForURL((u) => u.pathname === '/repositories' && u.search === ''); // the install notice is done
  await shot(page, '04-connected');

  // Push a commit to main: GitHub's push example, signed with the webhook secret.
  const sha = app.commit(REPO, 'main', { ...files, 'README.md': `${files['README.md']}\nfaster\n` });
  const pushed = await deliverPush(
    pushPayload({
      repo: { id: repo.id, owner: 'octo', name: 'fast-qwen', defaultBranch: 'main' },
      branch: 'main',
      sha,
      installationId: INSTALLATION,
    }),
  );
  expect(pushed).toMatchObject({ status: 202, body: { received: true, status: 'queued' } });

  // Check delivery: the push, succeeded, with its commit and run.
  await card.getByTestId('check-delivery').click();
  const delivery = card.locator('[data-testid="delivery"][data-event="push"]').first();
  await expect.poll(() => delivery.getAttribute('data-status'), { timeout: 30_000 }).toBe('succeeded');
  await expect.poll(async () => (await delivery.textContent()) ?? '').toContain(sha.slice(0, 7));
  await shot(page, '05-check-delivery');

  // Its run page: log lines stream in while it runs, until it succeeds.
  await delivery.getByTestId('delivery-run').click();
  await page.waitForURL(/\/runs\/[0-9a-f-]{36}$/);
  const pushRunId = page.url().split('/').pop()!;
  await page.getByTestId('run-status').waitFor();
  const seen: string[] = [];
  await expect
    .poll(
      async () => {
        const s = `${await runStatus(page)} ${await logCount(page)}`;
        if (seen[seen.length - 1] !== s) seen.push(s);
        return s;
      },
      { timeout: 60_000, interval: 100 },
    )
    .toMatch(/^(succeeded|failed|canceled)/);
  expect(await runStatus(page)).toBe('succeeded');
  expect(await logCount(page)).toBeGreaterThan(0);
  // Live, not loaded at the end: the page showed the run unfinished, then more lines without a reload.
  const unfinished = seen.filter((s) => !/^(succeeded|failed|canceled)/.test(s));
  expect(unfinished.length, `states seen: ${seen.join(' → ')}`).toBeGreaterThan(0);
  // Every stored line, each once.
  const stored = await page.evaluate(
    async (id) => ((await (await fetch(`/api/runs/${id}`)).json()) as { lastLogSeq: number }).lastLogSeq,
    pushRunId,
  );
  expect(await logCount(page)).toBe(stored);
  await page.getByText('fast-qwen #1').first().waitFor();
  await page.getByTestId('samples-table').waitFor();
  await shot(page, '06-push-run');
  console.log(`[e2e web-github] push run ${pushRunId}: ${seen.join(' → ')}`);

  // Run now, from the page: one more run of the latest commit.
  await page.goto('/repositories');
  await card.waitFor();
  await card.getByTestId('run-now').click();
  await page.waitForURL((u) => /^\/runs\/[0-9a-f-]{36}$/.test(u.pathname) && !u.pathname.endsWith(pushRunId));
  await page.getByText('fast-qwen #2').first().waitFor();
  await expect.poll(() => runStatus(page), { timeout: 60_000 }).toMatch(/^(succeeded|failed|canceled)/);
  expect(await runStatus(page)).toBe('succeeded');
  expect(await logCount(page)).toBeGreaterThan(0);
  await shot(page, '07-run-now-run');

  // Check delivery lists both, newest first: Run now, then the push.
  await page.goto('/repositories');
  await card.getByTestId('check-delivery').click();
  const rows = card.getByTestId('delivery');
  await expect.poll(() => rows.count()).toBe(2);
  expect(await rows.nth(0).getAttribute('data-event')).toBe('run_now');
  expect(await rows.nth(0).getAttribute('data-status')).toBe('succeeded');
  expect(await rows.nth(1).getAttribute('data-event')).toBe('push');
  await shot(page, '08-deliveries');

  // A plain member sees the connection and may Run now, but none of the owner/admin actions.
  const member = await browser('member');
  await member.goto('/signin');
  await member.getByTestId('dev-login').fill('octo-member');
  await member.getByRole('button', { name: 'Sign in', exact: true }).click();
  await member.getByTestId('account-menu').waitFor();
  await member.waitForURL((u) => !u.pathname.startsWith('/signin'));
  await member.goto('/team');
  await member.getByTestId('join-code').fill(inviteCode);
  await member.getByRole('button', { name: 'Join team' }).click();
  await expect.poll(() => member.getByTestId('team-name').textContent()).toBe('Octo Decoders');
  await member.goto('/repositories');
  const seenByMember = member.locator(`[data-testid="connection"][data-repo="${REPO}"]`);
  await seenByMember.waitFor();
  await seenByMember.getByText('public run on every push').waitFor();
  await seenByMember.getByTestId('run-now').waitFor();
  expect(await member.getByTestId('connect-repository').count()).toBe(0);
  await member.goto('/submissions');
  await member
    .getByTestId('connect-card')
    .getByText('A team owner or admin can connect a repository.')
    .waitFor();
  expect(await member.getByTestId('submissions-connect-repository').count()).toBe(0);
  await member.goto('/repositories');
  await seenByMember.waitFor();
  expect(await seenByMember.getByTestId('check-delivery').count()).toBe(0);
  expect(await seenByMember.getByRole('button', { name: 'Disconnect' }).count()).toBe(0);
  expect(await seenByMember.getByTestId('auto-run').count()).toBe(0);
  expect(await member.getByTestId('granted').count()).toBe(0);
  await shot(member, '09-member');

  expect(consoleErrors).toEqual([]);
  console.log(`[e2e web-github] done in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
}
