import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../apps/api/src/config/config';
import { GithubClient, GithubError, GithubUnreachable } from '../../apps/api/src/github/github-client';
import { APP_ID, appKeys, githubAppEnv } from '../support/github-app';
import { GithubStandin, startGithubStandin } from '../support/github-standin';
import { ROOT } from '../support/hub';

const INSTALLATION = 777;
const secondary = 'You have exceeded a secondary rate limit. Please wait a few minutes before you try again.';
const nowSeconds = () => Math.floor(Date.now() / 1000);

/**
 * The hub's GitHub client against the stand-in answering GitHub's rate-limit refusals: a secondary
 * limit (403 or 429 with `retry-after`) is retried after that delay, a primary one
 * (`x-ratelimit-remaining: 0`) after `x-ratelimit-reset`; a wait longer than the hub waits, or
 * more refusals than GITHUB_RETRY_ATTEMPTS, gives up with words that say when to try again.
 */
describe('GitHub calls under GitHub rate limits', () => {
  let standin: GithubStandin;
  let client: GithubClient;
  beforeAll(async () => {
    standin = await startGithubStandin();
    const keys = appKeys();
    standin.app.configure({ appId: APP_ID, publicKey: keys.publicKey });
    standin.app.addInstallation(INSTALLATION, { login: 'acme', id: 99, type: 'Organization' });
    const config = loadConfig(
      {
        NODE_ENV: 'test',
        ...githubAppEnv(standin, keys.privateKeyPem),
        GITHUB_RETRY_ATTEMPTS: '3',
        GITHUB_RETRY_BASE_MS: '200',
        GITHUB_RATE_LIMIT_MAX_WAIT_SECONDS: '5',
      },
      ROOT,
    );
    client = new GithubClient(config);
  });
  afterAll(async () => standin?.close());

  /** The stand-in's calls (and their times) made by `fn`. */
  async function calls<T>(fn: () => Promise<T>): Promise<{ result: T | Error; times: number[] }> {
    const from = standin.app.callTimes.length;
    let result: T | Error;
    try {
      result = await fn();
    } catch (err) {
      result = err as Error;
    }
    return { result, times: standin.app.callTimes.slice(from) };
  }

  it('a 403 secondary limit with retry-after, then success: retried once, after that delay', async () => {
    standin.app.limitNext = [{ status: 403, headers: { 'retry-after': '2' }, message: secondary }];
    const { result, times } = await calls(() => client.getInstallation(String(INSTALLATION)));
    expect(result).toMatchObject({ id: String(INSTALLATION), accountLogin: 'acme' });
    expect(times).toHaveLength(2);
    expect(times[1] - times[0]).toBeGreaterThanOrEqual(1_950);
    expect(times[1] - times[0]).toBeLessThan(3_500);
  });

  it('a 429 with retry-after and no word of a secondary limit is taken as one: retried after the delay', async () => {
    standin.app.limitNext = [{ status: 429, headers: { 'retry-after': '1' }, message: 'Too Many Requests' }];
    const { result, times } = await calls(() => client.getInstallation(String(INSTALLATION)));
    expect(result).toMatchObject({ id: String(INSTALLATION) });
    expect(times).toHaveLength(2);
    expect(times[1] - times[0]).toBeGreaterThanOrEqual(950);
    expect(times[1] - times[0]).toBeLessThan(2_500);
  });

  it('a primary limit (x-ratelimit-remaining 0): retried after x-ratelimit-reset', async () => {
    const reset = nowSeconds() + 2;
    standin.app.limitNext = [
      {
        status: 403,
        headers: {
          'x-ratelimit-remaining': '0',
          'x-ratelimit-limit': '5000',
          'x-ratelimit-reset': String(reset),
        },
        message: 'API rate limit exceeded for installation ID 777.',
      },
    ];
    const { result, times } = await calls(() => client.getInstallation(String(INSTALLATION)));
    expect(result).toMatchObject({ id: String(INSTALLATION) });
    expect(times).toHaveLength(2);
    expect(times[1]).toBeGreaterThanOrEqual(reset * 1000);
  });

  it('gives up at once when the limit resets later than the hub waits, saying when', async () => {
    // A reset at hh:mm:59: the wait the throttling plugin hands over is rounded up, so "now + wait"
    // named the next minute (CI saw 11:31:00 for a reset at 11:30:59); the message must name the
    // reset GitHub sent.
    const inAnHour = nowSeconds() + 3600;
    const reset = inAnHour - (inAnHour % 60) + 59;
    standin.app.limitNext = [
      {
        status: 403,
        headers: { 'x-ratelimit-remaining': '0', 'x-ratelimit-reset': String(reset) },
        message: 'API rate limit exceeded for installation ID 777.',
      },
    ];
    const started = Date.now();
    const { result, times } = await calls(() => client.getInstallation(String(INSTALLATION)));
    expect(Date.now() - started).toBeLessThan(1_500);
    expect(times).toHaveLength(1);
    expect(result).toBeInstanceOf(GithubUnreachable);
    const message = (result as Error).message;
    expect(message).toMatch(/rate limit/);
    expect(message).toContain(`until ${new Date(reset * 1000).toISOString().slice(11, 19)} UTC`);
    expect(message).toMatch(/redeliver the delivery or use Run now/);
  });

  it('gives up after GITHUB_RETRY_ATTEMPTS refusals in a row', async () => {
    standin.app.limitNext = Array.from({ length: 5 }, () => ({
      status: 429,
      headers: { 'retry-after': '1' },
      message: secondary,
    }));
    const { result, times } = await calls(() => client.getInstallation(String(INSTALLATION)));
    standin.app.limitNext = [];
    expect(times).toHaveLength(3);
    expect(result).toBeInstanceOf(GithubUnreachable);
    expect((result as Error).message).toMatch(/after 3 attempts.*secondary rate limit/);
  });

  it('5xx is still retried with backoff (GITHUB_RETRY_BASE_MS, growing), a 404 never', async () => {
    standin.app.failNext = 2;
    const { result, times } = await calls(() => client.getInstallation(String(INSTALLATION)));
    expect(result).toMatchObject({ id: String(INSTALLATION) });
    expect(times).toHaveLength(3);
    expect(times[1] - times[0]).toBeGreaterThanOrEqual(190);
    expect(times[2] - times[1]).toBeGreaterThan(times[1] - times[0]);

    const missing = await calls(() => client.getInstallation('123456'));
    expect(missing.times).toHaveLength(1);
    expect(missing.result).toBeInstanceOf(GithubError);
    expect((missing.result as GithubError).status).toBe(404);
  });
});
