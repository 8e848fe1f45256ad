import { createHash, randomBytes, verify, KeyObject } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { gzipSync } from 'node:zlib';
import { writeTar } from '@dryft/libs';

export interface StandinRepo {
  id: number;
  owner: string;
  name: string;
  defaultBranch: string;
  private: boolean;
  /** branch -> head sha */
  branches: Map<string, string>;
  /** sha -> the commit's files (path -> content) */
  commits: Map<string, Record<string, string | Buffer>>;
}

export interface StandinInstallation {
  id: number;
  account: { login: string; id: number; type: 'User' | 'Organization' };
  repositoryIds: Set<number>;
}

const json = (res: ServerResponse, status: number, body: unknown) =>
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8' }).end(JSON.stringify(body));

/**
 * The GitHub App half of the stand-in: what `@octokit/app` calls on behalf of the hub. App calls
 * must carry a JWT signed RS256 with the test key whose `iss` is the app id; repository calls must
 * carry an installation token this server issued, and see only that installation's repositories.
 * `failNext` makes the next N App requests answer 503 (GitHub down), to test retries; `limitNext`
 * answers the next App requests with GitHub's rate-limit refusals (403/429, `retry-after`,
 * `x-ratelimit-remaining: 0` with `x-ratelimit-reset`).
 */
export class GithubAppStandin {
  baseUrl = '';
  appId = '';
  publicKey?: KeyObject;
  slug = 'dryft-test';
  /** Where the install page sends the browser back to (the hub's setup URL). */
  setupUrl = '';
  /**
   * The installation a visit to the install page "creates" when the URL names none (a browser
   * following the hub's redirect: on GitHub the person would pick the account and repositories).
   */
  installOnVisit?: number;
  readonly installations = new Map<number, StandinInstallation>();
  readonly repos = new Map<string, StandinRepo>();
  /** Issued installation tokens -> installation id. */
  readonly tokens = new Map<string, number>();
  /** Answer the next N App/API requests with 503. */
  failNext = 0;
  /** The next App/API requests' answers, one each, before anything else is looked at. */
  limitNext: { status: number; headers?: Record<string, string>; message?: string }[] = [];
  /** Counts of App/API requests by "METHOD /path-pattern", for assertions. */
  readonly calls: string[] = [];
  /** When each of `calls` arrived (Date.now()). */
  readonly callTimes: number[] = [];
  private nextRepoId = 5000;

  configure(opts: { appId: string; publicKey: KeyObject }): void {
    this.appId = opts.appId;
    this.publicKey = opts.publicKey;
  }

  addInstallation(id: number, account: StandinInstallation['account']): StandinInstallation {
    const inst = { id, account, repositoryIds: new Set<number>() };
    this.installations.set(id, inst);
    return inst;
  }

  /** A repository with one commit on its default branch; grant it to an installation with `grant`. */
  addRepo(fullName: string, files: Record<string, string | Buffer>, defaultBranch = 'main'): StandinRepo {
    const [owner, name] = fullName.split('/');
    const repo: StandinRepo = {
      id: this.nextRepoId++,
      owner,
      name,
      defaultBranch,
      private: true,
      branches: new Map(),
      commits: new Map(),
    };
    this.repos.set(fullName.toLowerCase(), repo);
    this.commit(fullName, defaultBranch, files);
    return repo;
  }

  grant(installationId: number, repo: StandinRepo): void {
    this.installations.get(installationId)!.repositoryIds.add(repo.id);
  }

  /** Pushes a commit with exactly these files to a branch; returns its sha. */
  commit(fullName: string, branch: string, files: Record<string, string | Buffer>): string {
    const repo = this.repos.get(fullName.toLowerCase())!;
    const sha = createHash('sha1').update(randomBytes(16)).digest('hex');
    repo.commits.set(sha, files);
    repo.branches.set(branch, sha);
    return sha;
  }

  /** The tar.gz GitHub serves for a commit: everything under a top folder `owner-repo-sha7/`. */
  tarball(repo: StandinRepo, sha: string): Buffer {
    const top = `${repo.owner}-${repo.name}-${sha.slice(0, 7)}`;
    const files = Object.entries(repo.commits.get(sha)!).map(([p, content]) => ({
      name: `${top}/${p}`,
      content: typeof content === 'string' ? Buffer.from(content) : content,
    }));
    return gzipSync(writeTar(files));
  }

  async handle(req: IncomingMessage, res: ServerResponse, url: URL): Promise<boolean> {
    const method = req.method ?? 'GET';
    const path = url.pathname;
    // The install page: GitHub installs at once and sends the browser to the setup URL.
    let m = /^\/apps\/([^/]+)\/installations\/new$/.exec(path);
    if (method === 'GET' && m) {
      const back = new URL(this.setupUrl);
      back.searchParams.set(
        'installation_id',
        url.searchParams.get('installation') ??
          (this.installOnVisit !== undefined ? String(this.installOnVisit) : ''),
      );
      back.searchParams.set('setup_action', 'install');
      if (url.searchParams.get('state')) back.searchParams.set('state', url.searchParams.get('state')!);
      res.writeHead(302, { location: back.toString() }).end();
      return true;
    }
    const isApi =
      path.startsWith('/app/') ||
      path.startsWith('/installation/') ||
      path.startsWith('/repos/') ||
      path.startsWith('/_codeload/');
    if (!isApi) return false;
    this.calls.push(`${method} ${path}`);
    this.callTimes.push(Date.now());
    const limited = this.limitNext.shift();
    if (limited) {
      res
        .writeHead(limited.status, { 'content-type': 'application/json; charset=utf-8', ...limited.headers })
        .end(JSON.stringify({ message: limited.message ?? 'Forbidden' }));
      return true;
    }
    if (this.failNext > 0) {
      this.failNext--;
      json(res, 503, { message: 'Service Unavailable (stand-in is down)' });
      return true;
    }
    const auth = req.headers.authorization ?? '';

    if (path.startsWith('/app/')) {
      const problem = this.checkJwt(auth);
      if (problem) return (json(res, 401, { message: problem }), true);
      m = /^\/app\/installations\/(\d+)\/access_tokens$/.exec(path);
      if (method === 'POST' && m) {
        const inst = this.installations.get(Number(m[1]));
        if (!inst) return (json(res, 404, { message: 'Not Found' }), true);
        const token = `ghs_${randomBytes(18).toString('hex')}`;
        this.tokens.set(token, inst.id);
        json(res, 201, {
          token,
          expires_at: new Date(Date.now() + 3600_000).toISOString(),
          permissions: { contents: 'read', metadata: 'read' },
          repository_selection: 'selected',
        });
        return true;
      }
      m = /^\/app\/installations\/(\d+)$/.exec(path);
      if (method === 'GET' && m) {
        const inst = this.installations.get(Number(m[1]));
        if (!inst) return (json(res, 404, { message: 'Not Found' }), true);
        json(res, 200, {
          id: inst.id,
          account: inst.account,
          app_id: Number(this.appId),
          target_type: inst.account.type,
          repository_selection: 'selected',
        });
        return true;
      }
      return (json(res, 404, { message: 'Not Found' }), true);
    }

    if (path.startsWith('/_codeload/')) {
      // codeload.github.com: the signed redirect target, no Authorization header needed.
      m = /^\/_codeload\/([^/]+)\/([^/]+)\/legacy\.tar\.gz\/([0-9a-f]{40})$/.exec(path);
      const repo = m && this.repos.get(`${m[1]}/${m[2]}`.toLowerCase());
      if (!m || !repo || !repo.commits.has(m[3]) || !this.tokens.has(url.searchParams.get('token') ?? ''))
        return (json(res, 404, { message: 'Not Found' }), true);
      const body = this.tarball(repo, m[3]);
      res.writeHead(200, { 'content-type': 'application/x-gzip', 'content-length': body.length }).end(body);
      return true;
    }

    const token = auth.replace(/^(token|Bearer)\s+/i, '');
    const installationId = this.tokens.get(token);
    if (installationId === undefined) return (json(res, 401, { message: 'Bad credentials' }), true);
    const inst = this.installations.get(installationId);
    if (!inst) return (json(res, 401, { message: 'Bad credentials (installation deleted)' }), true);
    const granted = [...this.repos.values()].filter((r) => inst.repositoryIds.has(r.id));

    if (method === 'GET' && path === '/installation/repositories') {
      const perPage = Number(url.searchParams.get('per_page') ?? 30);
      const page = Number(url.searchParams.get('page') ?? 1);
      json(res, 200, {
        total_count: granted.length,
        repositories: granted.slice((page - 1) * perPage, page * perPage).map((r) => this.repoJson(r)),
      });
      return true;
    }
    m = /^\/repos\/([^/]+)\/([^/]+)(?:\/(commits|tarball)\/(.+))?$/.exec(path);
    const repo =
      m && granted.find((r) => `${r.owner}/${r.name}`.toLowerCase() === `${m![1]}/${m![2]}`.toLowerCase());
    if (!m || !repo) return (json(res, 404, { message: 'Not Found' }), true);
    if (method === 'GET' && !m[3]) return (json(res, 200, this.repoJson(repo)), true);
    const ref = decodeURIComponent(m[4] ?? '');
    const sha = repo.commits.has(ref) ? ref : repo.branches.get(ref.replace(/^(refs\/)?heads\//, ''));
    if (!sha) return (json(res, 404, { message: 'No commit found for SHA: ' + ref }), true);
    if (method === 'GET' && m[3] === 'commits')
      return (json(res, 200, { sha, commit: { message: 'commit' } }), true);
    if (method === 'GET' && m[3] === 'tarball') {
      res
        .writeHead(302, {
          location: `${this.baseUrl}/_codeload/${repo.owner}/${repo.name}/legacy.tar.gz/${sha}?token=${token}`,
        })
        .end();
      return true;
    }
    return (json(res, 404, { message: 'Not Found' }), true);
  }

  private repoJson(r: StandinRepo) {
    return {
      id: r.id,
      name: r.name,
      full_name: `${r.owner}/${r.name}`,
      owner: { login: r.owner },
      private: r.private,
      html_url: `${this.baseUrl}/${r.owner}/${r.name}`,
      default_branch: r.defaultBranch,
    };
  }

  /** A GitHub App JWT: RS256 over header.payload with the app's key, iss = app id, not expired. */
  private checkJwt(auth: string): string | null {
    const jwt = /^Bearer\s+(.+)$/i.exec(auth)?.[1];
    if (!jwt || !this.publicKey) return 'A JSON web token could not be decoded';
    const [h, p, sig] = jwt.split('.');
    if (!h || !p || !sig) return 'A JSON web token could not be decoded';
    let header: { alg?: string };
    let payload: { iss?: unknown; exp?: unknown };
    try {
      header = JSON.parse(Buffer.from(h, 'base64url').toString());
      payload = JSON.parse(Buffer.from(p, 'base64url').toString());
    } catch {
      return 'A JSON web token could not be decoded';
    }
    if (header.alg !== 'RS256') return `'alg' must be RS256`;
    if (!verify('RSA-SHA256', Buffer.from(`${h}.${p}`), this.publicKey, Buffer.from(sig, 'base64url')))
      return 'The JWT signature does not match the app key';
    if (String(payload.iss) !== this.appId) return `'Issuer' claim ('iss') must be the app id ${this.appId}`;
    const now = Math.floor(Date.now() / 1000);
    if (typeof payload.exp !== 'number' || payload.exp < now)
      return "'Expiration time' claim ('exp') is too far in the past";
    return null;
  }
}
