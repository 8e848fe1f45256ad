import { Inject, Injectable, Logger } from '@nestjs/common';
import { App } from '@octokit/app';
// @octokit/app builds on @octokit/core; its class is needed only to point requests at GITHUB_API_URL.
import { Octokit } from '@octokit/core';
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
  response?: { status: number };
}

/**
 * The GitHub App as the hub uses it: JWT-authenticated app calls, installation tokens (cached by
 * @octokit/auth-app until shortly before they expire), and the few repository reads a push needs.
 * Every call retries transient failures (unreachable, 5xx, 429) with exponential backoff.
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
        Octokit: Octokit.defaults({ baseUrl: s.apiUrl, userAgent: 'dryft-hub' }),
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

  private async installationOctokit(installationId: string) {
    return this.octokitApp.getInstallationOctokit(Number(installationId));
  }

  /**
   * Runs `fn`, retrying transient failures with exponential backoff. A definite answer (404, 403,
   * 401, 422) is not retried: it becomes a GithubError the caller turns into words.
   */
  private async retrying<T>(what: string, fn: () => Promise<T>): Promise<T> {
    const { retryAttempts, retryBaseMs } = this.settings;
    let last = '';
    for (let attempt = 1; attempt <= retryAttempts; attempt++) {
      try {
        return await fn();
      } catch (err) {
        if (err instanceof GithubError || err instanceof AppError) throw err;
        const e = err as OctokitError;
        const status = e.response?.status ?? null;
        const transient = status === null || status >= 500 || status === 429;
        if (!transient)
          throw new GithubError(
            `GitHub answered ${status} to the request to ${what}: ${e.message ?? 'no message'}`,
            status,
          );
        last = status === null ? (e.message ?? 'no response') : `HTTP ${status}`;
        if (attempt < retryAttempts) {
          const delay = retryBaseMs * 2 ** (attempt - 1);
          this.logger.warn(`GitHub ${what}: attempt ${attempt} failed (${last}); retrying in ${delay} ms`);
          await new Promise((r) => setTimeout(r, delay));
        }
      }
    }
    throw new GithubUnreachable(what, retryAttempts, last);
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
