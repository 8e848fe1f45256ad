import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { chromium, type Browser, type BrowserContext, type ConsoleMessage, type Page } from 'playwright-core';
import { ROOT } from './hub';
import { CHROMIUM } from './prerequisites';

/**
 * Chromium for the end-to-end web tests: the flags, the built app they need, the session cookies of
 * a user signed in through the API, the browser profiles a spec opens (and closes), the dev sign-in
 * form, and the console errors that fail a test.
 */

/** Headless, no sandbox (CI runs as root), no GPU, no first-run page or background fetches. */
export const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--no-first-run',
  '--disable-background-networking',
];

/** CHROMIUM_ARGS and no QUIC, component updates or sync: no request but the page's own. */
export const CHROMIUM_ARGS_NO_EXTRA_TRAFFIC = [
  ...CHROMIUM_ARGS,
  '--disable-quic',
  '--disable-component-update',
  '--disable-sync',
];

/** Where the web tests' screenshots are committed (test/e2e/screenshots). */
export const SCREENSHOTS = path.join(ROOT, 'test/e2e/screenshots');

/** The built web app the API serves; `npm run build` makes it. */
export const WEB_BUILD = path.join(ROOT, 'apps/web/build/200.html');

/** Fails a web spec at once, saying what to do, when the web app has not been built. */
export function requireBuiltWebApp(): void {
  if (!existsSync(WEB_BUILD))
    throw new Error('apps/web/build is missing: run `npm run build` first (npm test does).');
}

/**
 * A `Cookie` header ("a=1; b=2", as TestUser and HttpUser keep it) as Playwright's cookies for
 * `url`: a browser signed in as that user.
 */
export function browserCookies(cookieHeader: string, url: string) {
  return cookieHeader.split('; ').map((pair) => {
    const i = pair.indexOf('=');
    return { name: pair.slice(0, i), value: pair.slice(i + 1), url };
  });
}

export interface ProfileOptions {
  baseURL: string;
  /** Default: 1280 × 860. */
  viewport?: { width: number; height: number };
  permissions?: string[];
  acceptDownloads?: boolean;
  /** A `Cookie` header to sign the profile in with (see browserCookies). */
  cookie?: string;
  /**
   * The classic scrollbars a desktop browser draws, which take room from a scrolling box (headless
   * Chromium hides them by default; a launch flag, so these profiles share a second Chromium).
   */
  scrollbars?: boolean;
}

/**
 * The fresh browser profiles a spec opens, each its own cookies, storage and cache (its own user):
 * contexts of one Chromium launched on the first open, since a Chromium launched per profile cost
 * seconds each; each profile also gets a temporary folder for what the test downloads or writes.
 * closeAll (in afterAll) closes them, the browser, and removes the folders.
 */
export class BrowserProfiles {
  private readonly opened: BrowserContext[] = [];
  private readonly dirs: string[] = [];
  /** One Chromium without scrollbars (headless's default) and, when asked for, one with them. */
  private readonly browsers = new Map<'hidden' | 'drawn', Promise<Browser>>();

  /** `args`: Chromium's flags (default CHROMIUM_ARGS). */
  constructor(
    private readonly dirPrefix: string,
    private readonly args: string[] = CHROMIUM_ARGS,
  ) {}

  /** Every profile open, in the order opened. */
  get contexts(): readonly BrowserContext[] {
    return this.opened;
  }

  /** The profiles' folders, in the order opened (removed by closeAll with anything put there). */
  get folders(): readonly string[] {
    return this.dirs;
  }

  async open(label: string, options: ProfileOptions): Promise<BrowserContext> {
    this.dirs.push(mkdtempSync(path.join(tmpdir(), `${this.dirPrefix}${label}-`)));
    const kind = options.scrollbars ? 'drawn' : 'hidden';
    if (!this.browsers.has(kind))
      this.browsers.set(
        kind,
        chromium.launch({
          executablePath: CHROMIUM,
          headless: true,
          args: this.args,
          ...(options.scrollbars ? { ignoreDefaultArgs: ['--hide-scrollbars'] } : {}),
        }),
      );
    const browser = await this.browsers.get(kind)!;
    const ctx = await browser.newContext({
      viewport: options.viewport ?? { width: 1280, height: 860 },
      baseURL: options.baseURL,
      ...(options.permissions ? { permissions: options.permissions } : {}),
      ...(options.acceptDownloads ? { acceptDownloads: true } : {}),
    });
    this.opened.push(ctx);
    if (options.cookie) await ctx.addCookies(browserCookies(options.cookie, options.baseURL));
    return ctx;
  }

  /** A new profile's page. */
  async openPage(label: string, options: ProfileOptions): Promise<Page> {
    return (await this.open(label, options)).newPage();
  }

  async closeAll(): Promise<void> {
    for (const ctx of this.opened.splice(0)) await ctx.close().catch(() => undefined);
    const browsers = [...this.browsers.values()];
    this.browsers.clear();
    for (const browser of browsers)
      await (await browser.catch(() => undefined))?.close().catch(() => undefined);
    for (const dir of this.dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
  }
}

/** Signs `login` in through the web's dev sign-in form and waits until the page has left /signin. */
export async function signInThroughForm(page: Page, login: string): Promise<void> {
  await page.goto('/signin');
  await page.getByTestId('dev-login').fill(login);
  await page.getByRole('button', { name: 'Sign in', exact: true }).click();
  await page.getByTestId('account-menu').waitFor();
  await page.waitForURL((u) => !u.pathname.startsWith('/signin'));
}

/**
 * Records into `errors` every console error and uncaught page error of `page`, as
 * "[label] text (url)", but those `expected` says the test provokes on purpose (Chromium logs every
 * failed fetch as an error). A spec then expects `errors` to be empty.
 */
export function recordPageErrors(
  page: Page,
  label: string,
  errors: string[],
  expected: (msg: ConsoleMessage, where: string) => boolean = () => false,
): void {
  page.on('console', (msg) => {
    if (msg.type() !== 'error') return;
    const where = msg.location().url || page.url();
    if (expected(msg, where)) return;
    errors.push(`[${label}] ${msg.text()} (${where})`);
  });
  page.on('pageerror', (err) => errors.push(`[${label}] page error: ${err.message} (${page.url()})`));
}
