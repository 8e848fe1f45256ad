import { createHmac, generateKeyPairSync, randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { expect } from 'vitest';
import examples from '@octokit/webhooks-examples/api.github.com/index.json';
import type { GithubStandin } from './github-standin';
import { ROOT, TestHub } from './hub';
import type { TestUser } from './users';

export const APP_ID = '4242';
export const WEBHOOK_SECRET = 'test-webhook-secret';

/** A fresh RSA key for the test App: the hub signs JWTs with it, the stand-in verifies them. */
export function appKeys() {
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  // GitHub hands out PKCS#1 PEMs ("BEGIN RSA PRIVATE KEY"); the hub must take them as they come.
  return { privateKeyPem: privateKey.export({ type: 'pkcs1', format: 'pem' }) as string, publicKey };
}

/** The env that points the hub's GitHub App at the stand-in, with fast retries. */
export function githubAppEnv(standin: GithubStandin, privateKeyPem: string): Record<string, string> {
  return {
    GITHUB_APP_ID: APP_ID,
    GITHUB_APP_SLUG: standin.app.slug,
    GITHUB_APP_PRIVATE_KEY: privateKeyPem,
    GITHUB_WEBHOOK_SECRET: WEBHOOK_SECRET,
    GITHUB_WEB_URL: standin.url,
    GITHUB_API_URL: standin.url,
    GITHUB_RETRY_ATTEMPTS: '4',
    GITHUB_RETRY_BASE_MS: '20',
  };
}

/** The toy-decode starter engine, as files of a repository (plus files that must not be submitted). */
export function starterRepoFiles(): Record<string, string> {
  const engine = readFileSync(path.join(ROOT, 'starters/toy-decode/engine/engine.py'), 'utf8');
  return {
    'README.md': '# fast-qwen\n',
    'AGENTS.md': 'notes for the coding agent\n',
    'agent/loop.py': 'print("research loop")\n',
    'engine/engine.py': engine,
    'engine/kernels/__init__.py': '',
  };
}

type Example = { name: string; examples: Record<string, any>[] };
const EXAMPLES = examples as unknown as Example[];

/** GitHub's own example payload for an event (and action), deep-copied for adjusting. */
export function example(
  event: string,
  pick: (e: Record<string, any>) => boolean = () => true,
): Record<string, any> {
  const found = EXAMPLES.find((e) => e.name === event)?.examples.find(pick);
  if (!found) throw new Error(`no example for ${event}`);
  return structuredClone(found);
}

/** GitHub's push example, moved to our repository, branch, commit and installation. */
export function pushPayload(opts: {
  repo: { id: number; owner: string; name: string; defaultBranch: string };
  branch: string;
  sha: string;
  installationId: number;
}) {
  const p = example('push', (e) => String(e.ref).startsWith('refs/heads/'));
  const fullName = `${opts.repo.owner}/${opts.repo.name}`;
  p.ref = `refs/heads/${opts.branch}`;
  p.before = p.after;
  p.after = opts.sha;
  p.created = false;
  p.deleted = false;
  if (p.head_commit) p.head_commit.id = opts.sha;
  p.repository = {
    ...p.repository,
    id: opts.repo.id,
    name: opts.repo.name,
    full_name: fullName,
    default_branch: opts.repo.defaultBranch,
    master_branch: opts.repo.defaultBranch,
  };
  p.repository.owner = { ...p.repository.owner, login: opts.repo.owner, name: opts.repo.owner };
  p.installation = { id: opts.installationId, node_id: 'MDIzOkludGVncmF0aW9uSW5zdGFsbGF0aW9uMQ==' };
  return p;
}

export function sign(body: string, secret = WEBHOOK_SECRET): string {
  return `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`;
}

/** POSTs a delivery the way GitHub does: raw JSON body, event, delivery id and signature headers. */
export function deliver(
  hub: TestHub,
  event: string,
  payload: object,
  opts: { id?: string; signature?: string | null } = {},
) {
  const body = JSON.stringify(payload);
  let req = hub.http
    .post('/api/github/webhooks')
    .set('Content-Type', 'application/json')
    .set('User-Agent', 'GitHub-Hookshot/test')
    .set('X-GitHub-Event', event)
    .set('X-GitHub-Delivery', opts.id ?? randomUUID())
    .set('X-GitHub-Hook-Installation-Target-Type', 'integration');
  if (opts.signature !== null) req = req.set('X-Hub-Signature-256', opts.signature ?? sign(body));
  return req.send(body);
}

/**
 * The install flow as a browser walks it: the hub redirects to GitHub with a state, the stand-in
 * "installs" and redirects to the hub's setup URL, which binds the installation to the team.
 */
export async function install(
  hub: TestHub,
  standin: GithubStandin,
  user: TestUser,
  teamId: string,
  installationId: number,
) {
  standin.app.setupUrl = `${hub.baseUrl}/api/github/setup`;
  const start = await user.get(`/api/github/install?team=${teamId}`);
  expect(start.status).toBe(302);
  const toGithub = new URL(start.headers.location);
  expect(toGithub.origin + toGithub.pathname).toBe(
    `${standin.url}/apps/${standin.app.slug}/installations/new`,
  );
  toGithub.searchParams.set('installation', String(installationId));
  const atGithub = await fetch(toGithub, { redirect: 'manual' });
  const back = new URL(atGithub.headers.get('location')!);
  const setup = await user.get(`${back.pathname}${back.search}`).set('Accept', 'application/json');
  return { setup, state: toGithub.searchParams.get('state')! };
}

/** Polls "Check delivery" until the delivery with this GitHub id is processed. */
export async function settled(
  user: TestUser,
  teamId: string,
  connId: string,
  githubDeliveryId: string,
  timeoutMs = 15_000,
) {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const res = await user.get(`/api/teams/${teamId}/repositories/${connId}/deliveries?limit=100`);
    expect(res.status).toBe(200);
    const d = res.body.items.find(
      (x: { githubDeliveryId: string }) => x.githubDeliveryId === githubDeliveryId,
    );
    if (d && !['queued', 'processing'].includes(d.status)) return d;
    if (Date.now() > until)
      throw new Error(`delivery ${githubDeliveryId} not processed in time: ${JSON.stringify(d)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}
