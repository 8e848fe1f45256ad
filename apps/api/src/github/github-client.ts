import { Inject, Injectable, Logger } from '@nestjs/common';
import { AsyncLocalStorage } from 'node:async_hooks';
import { App } from '@octokit/app';
// @octokit/app builds on @octokit/core; its class is needed to point requests at GITHUB_API_URL
// and to add the retry and throttling plugins (ESM-only, like @octokit/core 7: loaded by Node's
// require of ES modules, Node ≥ 20.19).
import { Octokit } from '@octokit/core';
import { retry } from '@octokit/plugin-retry';
import { throttling } from '@octokit/plugin-throttling';
import { AppError } from '../common/errors';
import { CONFIG, Config } from '../config/config';
import { GithubAppSettings, githubAppSettings } from './github-settings';

/** Repository tarballs beyond this are refused: an engine folder is at most 16 MiB expanded. */
export const MAX_TARBALL_BYTES = 100 * 1024 * 1024;

export interface InstallationInfo {
  id: string;
  accountLogin: string;
  accountType: string;
  accountId: string;
}

export interface GithubRepository {
  id: string;
  fullName: string;
  name: string;
  owner: string;
  defaultBranch: string;
  private: boolean;
  htmlUrl: string;
}

/** A GitHub answer the caller can act on (404 of a repository, 403 of a suspended installation). */
export class GithubError extends Error {
  constructor(
    message: string,
    readonly status: number | null,
  ) {
    super(message);
  }
}

/** GitHub could not be reached (or kept failing) after every retry. */
export class GithubUnreachable extends AppError {
  constructor(what: string, attempts: number, cause: string) {
    super(
      502,
      'github_unreachable',
      `GitHub could not be reached to ${what} after ${attempts} attempt${attempts === 1 ? '' : 's'} (${cause}). Try again later: redeliver the delivery or use Run now.`,
    );
  }
}

interface OctokitError {
  status?: number;
  message?: string;
  request?: unknown;
  response?: { status: number; headers?: Record<string, string | number | undefined> };
}

/** Why the throttling plugin stopped waiting on a rate limit, kept for the error's words. */
interface GaveUp {
  kind: 'primary' | 'secondary';
  retryAfterSeconds: number;
  attempts: number;
}

const SECONDARY = /\bsecondary rate\b/i;

/** The call in progress (`GithubClient.retrying`): where the throttling callbacks note giving up. */
const currentCall = new AsyncLocalStorage<{ gaveUp?: GaveUp }>();

/**
 * GitHub signals a secondary rate limit with 403 or 429 and `retry-after`, and its message says
 * so; the throttling plugin recognises one only by that message. A 403 that carries `retry-after`,
 * and a 429 that is not a spent primary limit, are taken as secondary limits too, whatever their
 * message says, so they wait for `retry-after` (or GitHub's one minute) instead of failing at
 * once or being retried blind. Registered first, so it sees each answer before the other plugins.
 */
function secondaryLimits(octokit: Octokit): void {
  octokit.hook.error('request', (error: unknown) => {
    const e = error as OctokitError & Error;
    const status = e.status ?? e.response?.status;
    const headers = e.response?.headers ?? {};
    const primary = String(headers['x-ratelimit-remaining'] ?? '') === '0';
    const secondary =
      (status === 403 && headers['retry-after'] !== undefined) || (status === 429 && !primary);
    if (secondary && !primary && !SECONDARY.test(e.message ?? ''))
      e.message = `${e.message} (secondary rate limit)`;
    throw e;
  });
}

/**
 * Each call gets its own `request` options object. Without one, every call of an Octokit shares the
 * defaults' object (@octokit/endpoint merges it by reference), and the retry and throttling plugins
 * keep their `retryCount` on it: a call then started from the last call's count, with fewer
 * attempts and longer waits. Registered last, so it runs before the other plugins see the call.
 */
function ownRequestOptions(octokit: Octokit): void {
  octokit.hook.wrap('request', (request, options) => {
    options.request = { ...options.request };
    return request(options);
  });
}

/** The hub's Octokit: secondary limits recognised, transient failures retried, rate limits waited out. */
const HubOctokit = Octokit.plugin(secondaryLimits, retry, throttling, ownRequestOptions);

/**
 * The GitHub App as the hub uses it: JWT-authenticated app calls, installation tokens (cached by
 * @octokit/auth-app until shortly before they expire), and the few repository reads a push needs.
 * Every call goes through @octokit/plugin-retry (unreachable and 5xx: GITHUB_RETRY_ATTEMPTS
 * attempts, GITHUB_RETRY_BASE_MS × 1, 4, 9… between them) and @octokit/plugin-throttling (a
 * secondary limit waits `retry-after`, a primary one until `x-ratelimit-reset`, within the same
 * attempts and at most GITHUB_RATE_LIMIT_MAX_WAIT_SECONDS a wait; past that the call gives up
 * with when GitHub will take it again).
 */
@Injectable()
export class GithubClient {
  private readonly logger = new Logger('GithubClient');
  private app?: App;
  private settingsCache?: GithubAppSettings;

  constructor(@Inject(CONFIG) private readonly config: Config) {}

  get settings(): GithubAppSettings {
    return (this.settingsCache ??= githubAppSettings(this.config));
  }

  private get octokitApp(): App {
    if (!this.app) {
      const s = this.settings;
      this.app = new App({
        appId: s.appId,
        privateKey: s.privateKey,
        Octokit: HubOctokit.defaults({
          baseUrl: s.apiUrl,
          userAgent: 'dryft-hub',
          retry: {
            retries: s.retryAttempts - 1,
            retryAfterBaseValue: s.retryBaseMs,
            // 403 and 429 are rate limits (or definite refusals): the throttling plugin's to judge.
            doNotRetry: [400, 401, 403, 404, 410, 422, 429, 451],
          },
          throttle: {
            onRateLimit: (after: number, options: unknown, _kit: unknown, count: number) =>
              this.waitOut('primary', after, options, count),
            onSecondaryRateLimit: (after: number, options: unknown, _kit: unknown, count: number) =>
              this.waitOut('secondary', after, options, count),
          },
        }),
      });
    }
    return this.app;
  }

  /** GET /app/installations/:id with the app's JWT: the installation exists and is this app's. */
  async getInstallation(installationId: string): Promise<InstallationInfo> {
    const res = await this.retrying('read the installation', () =>
      this.octokitApp.octokit.request('GET /app/installations/{installation_id}', {
        installation_id: Number(installationId),
      }),
    );
    const account = (res.data.account ?? {}) as { login?: string; slug?: string; id?: number; type?: string };
    return {
      id: String(res.data.id),
      accountLogin: account.login ?? account.slug ?? 'unknown',
      accountType: account.type ?? 'Organization',
      accountId: String(account.id ?? ''),
    };
  }

  /** Every repository the installation grants, through an installation token. */
  async listRepositories(installationId: string): Promise<GithubRepository[]> {
    const out: GithubRepository[] = [];
    for (let page = 1; page <= 50; page++) {
      const res = await this.retrying('list the installation’s repositories', async () => {
        const kit = await this.installationOctokit(installationId);
        return kit.request('GET /installation/repositories', { per_page: 100, page });
      });
      const repos = res.data.repositories as RawRepo[];
      out.push(...repos.map(toRepository));
      if (repos.length < 100 || out.length >= res.data.total_count) break;
    }
    return out;
  }

  async getRepository(installationId: string, fullName: string): Promise<GithubRepository> {
    const [owner, repo] = fullName.split('/');
    const res = await this.retrying(`read ${fullName}`, async () => {
      const kit = await this.installationOctokit(installationId);
      return kit.request('GET /repos/{owner}/{repo}', { owner, repo });
    });
    return toRepository(res.data as RawRepo);
  }

  /** The commit a branch points at now. */
  async branchHead(installationId: string, fullName: string, branch: string): Promise<string> {
    const [owner, repo] = fullName.split('/');
    const res = await this.retrying(`read the head of ${branch} in ${fullName}`, async () => {
      const kit = await this.installationOctokit(installationId);
      return kit.request('GET /repos/{owner}/{repo}/commits/{ref}', { owner, repo, ref: `heads/${branch}` });
    });
    return (res.data as { sha: string }).sha;
  }

  /**
   * The commit's tar.gz (`GET /repos/{owner}/{repo}/tarball/{sha}`, which redirects to codeload),
   * read with a byte limit so a huge repository cannot exhaust memory.
   */
  async tarball(installationId: string, fullName: string, sha: string): Promise<Buffer> {
    const [owner, repo] = fullName.split('/');
    return this.retrying(`download ${fullName}@${sha.slice(0, 7)}`, async () => {
      const kit = await this.installationOctokit(installationId);
      const res = await kit.request('GET /repos/{owner}/{repo}/tarball/{ref}', {
        owner,
        repo,
        ref: sha,
        request: { parseSuccessResponseBody: false },
      });
      return readLimited(res.data as unknown as ReadableStream<Uint8Array>, MAX_TARBALL_BYTES, fullName);
    });
  }

  /** Whether to wait `after` s for a rate limit and try again (the throttling plugin asks). */
  private waitOut(kind: GaveUp['kind'], after: number, options: unknown, retryCount: number): boolean {
    const { retryAttempts } = this.settings;
    const maxWait = this.config.GITHUB_RATE_LIMIT_MAX_WAIT_SECONDS;
    const req = options as { method?: string; url?: string };
    const attempts = retryCount + 1;
    if (attempts < retryAttempts && after <= maxWait) {
      this.logger.warn(
        `GitHub ${req.method} ${req.url}: ${kind} rate limit (attempt ${attempts}); retrying in ${after} s`,
      );
      return true;
    }
    const call = currentCall.getStore();
    if (call) call.gaveUp = { kind, retryAfterSeconds: after, attempts };
    return false;
  }

  private async installationOctokit(installationId: string) {
    return this.octokitApp.getInstallationOctokit(Number(installationId));
  }

  /**
   * Runs `fn` (whose requests the plugins retry) and says what its failure means: a rate limit the
   * hub stopped waiting on, or GitHub unreachable after every attempt, becomes GithubUnreachable
   * (the delivery can be redelivered); a definite answer (404, 403, 401, 422) a GithubError the
   * caller turns into words.
   */
  private async retrying<T>(what: string, fn: () => Promise<T>): Promise<T> {
    const call: { gaveUp?: GaveUp } = {};
    try {
      return await currentCall.run(call, fn);
    } catch (err) {
      if (err instanceof GithubError || err instanceof AppError) throw err;
      const e = err as OctokitError;
      const status = e.response?.status ?? null;
      const gaveUp = call.gaveUp;
      const headers = e.response?.headers ?? {};
      if (gaveUp || ((status === 403 || status === 429) && SECONDARY.test(e.message ?? ''))) {
        const after = gaveUp?.retryAfterSeconds ?? Number(headers['retry-after'] ?? 60);
        // A primary limit names its own reset instant: say that one, not now + the plugin's wait
        // (rounded up by a second or so, which can name the next minute).
        const resetHeader = Number(headers['x-ratelimit-reset']);
        const until =
          gaveUp?.kind === 'primary' && Number.isFinite(resetHeader) && resetHeader > 0
            ? resetHeader * 1000
            : Date.now() + after * 1000;
        const at = new Date(until).toISOString().slice(11, 19);
        const cause =
          gaveUp?.kind === 'primary'
            ? `GitHub's API rate limit for this app is spent until ${at} UTC (x-ratelimit-reset)`
            : `GitHub's secondary rate limit: it asked to wait ${after} s, until ${at} UTC`;
        throw new GithubUnreachable(what, gaveUp?.attempts ?? this.settings.retryAttempts, cause);
      }
      if (status !== null && status < 500)
        throw new GithubError(
          `GitHub answered ${status} to the request to ${what}: ${e.message ?? 'no message'}`,
          status,
        );
      // A request error (5xx, or no answer) comes here after every attempt; anything else at once.
      const attempts = e.request ? this.settings.retryAttempts : 1;
      throw new GithubUnreachable(
        what,
        attempts,
        status === null ? (e.message ?? 'no response') : `HTTP ${status}`,
      );
    }
  }
}

interface RawRepo {
  id: number;
  name: string;
  full_name: string;
  owner: { login: string };
  default_branch?: string;
  private: boolean;
  html_url: string;
}

function toRepository(r: RawRepo): GithubRepository {
  return {
    id: String(r.id),
    fullName: r.full_name,
    name: r.name,
    owner: r.owner.login,
    defaultBranch: r.default_branch ?? 'main',
    private: r.private,
    htmlUrl: r.html_url,
  };
}

async function readLimited(
  body: ReadableStream<Uint8Array> | null,
  limit: number,
  fullName: string,
): Promise<Buffer> {
  if (!body) return Buffer.alloc(0);
  const reader = body.getReader();
  const chunks: Buffer[] = [];
  let total = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.byteLength;
    if (total > limit) {
      await reader.cancel();
      throw new GithubError(
        `The tarball of ${fullName} is larger than ${limit / 1024 / 1024} MiB; keep large files (weights, datasets) out of the repository.`,
        null,
      );
    }
    chunks.push(Buffer.from(value));
  }
  return Buffer.concat(chunks);
}
