import { sign as rsaSign } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { appKeys, APP_ID, githubAppEnv, install, starterRepoFiles } from '../support/github-app';
import { GithubStandin, startGithubStandin } from '../support/github-standin';
import { startTestHub, TestHub } from '../support/hub';
import { ownerWithTeam, signIn, TestUser, withToken } from '../support/users';

/** Installing the GitHub App and connecting repositories: who may, and whose installation it is. */
describe('GitHub App: installing and connecting repositories', () => {
  let standin: GithubStandin;
  let hub: TestHub;
  let alice: TestUser;
  let aliceTeam: { id: string; inviteCode: string };
  let bob: TestUser;
  let bobTeam: { id: string };
  let member: TestUser;
  const ALICE_INST = 8001;
  const BOB_INST = 8002;
  let keys: ReturnType<typeof appKeys>;

  beforeAll(async () => {
    standin = await startGithubStandin();
    keys = appKeys();
    standin.app.configure({ appId: APP_ID, publicKey: keys.publicKey });
    hub = await startTestHub({ env: githubAppEnv(standin, keys.privateKeyPem) });
    ({ owner: alice, team: aliceTeam } = await ownerWithTeam(hub, 'conn-alice', 'Alice Team'));
    ({ owner: bob, team: bobTeam } = await ownerWithTeam(hub, 'conn-bob', 'Bob Team'));
    member = await signIn(hub, 'conn-member');
    expect((await member.post('/api/teams/join', { code: aliceTeam.inviteCode })).status).toBe(200);
    standin.app.addInstallation(ALICE_INST, { login: 'alice-org', id: 501, type: 'Organization' });
    standin.app.addInstallation(BOB_INST, { login: 'bob-org', id: 502, type: 'Organization' });
    standin.app.grant(ALICE_INST, standin.app.addRepo('alice-org/fast-qwen', starterRepoFiles()));
    standin.app.grant(ALICE_INST, standin.app.addRepo('alice-org/notes', { 'README.md': 'notes' }, 'trunk'));
    standin.app.grant(BOB_INST, standin.app.addRepo('bob-org/bob-engine', starterRepoFiles()));
  });
  afterAll(async () => {
    await hub?.close();
    await standin?.close();
  });

  it('reports the feature as configured', async () => {
    const res = await hub.http.get('/api/github/status');
    expect(res.body).toMatchObject({
      configured: true,
      appSlug: 'dryft-test',
      appUrl: `${standin.url}/apps/dryft-test`,
    });
  });

  it('installs through GitHub and binds the installation to the team that started it; a state works once', async () => {
    const { setup, state } = await install(hub, standin, alice, aliceTeam.id, ALICE_INST);
    expect(setup.status).toBe(200);
    expect(setup.body).toMatchObject({
      installationId: String(ALICE_INST),
      teamId: aliceTeam.id,
      account: 'alice-org',
    });
    const reused = await alice
      .get(`/api/github/setup?installation_id=${ALICE_INST}&setup_action=install&state=${state}`)
      .set('Accept', 'application/json');
    expect(reused.status).toBe(400);
    expect(reused.body.error.code).toBe('install_state_invalid');
    // A browser is sent back to the Repositories page, with the refusal in the query.
    const browser = await alice
      .get(`/api/github/setup?installation_id=${ALICE_INST}&setup_action=install&state=${state}`)
      .set('Accept', 'text/html');
    expect(browser.status).toBe(302);
    expect(browser.headers.location).toMatch(/^\/repositories\?github_error=install_state_invalid&message=/);

    const repos = await alice.get(`/api/teams/${aliceTeam.id}/github/repositories`);
    expect(repos.status).toBe(200);
    expect(repos.body.installations).toEqual([
      expect.objectContaining({ installationId: String(ALICE_INST), account: 'alice-org' }),
    ]);
    expect(repos.body.repositories.map((r: { fullName: string }) => r.fullName).sort()).toEqual([
      'alice-org/fast-qwen',
      'alice-org/notes',
    ]);
    expect(
      repos.body.repositories.find((r: { fullName: string }) => r.fullName === 'alice-org/notes'),
    ).toMatchObject({ defaultBranch: 'trunk', connectionId: null, connectedElsewhere: false });
  });

  it('refuses the install flow, listing and connecting to a plain member and to API tokens', async () => {
    const install = await member.get(`/api/github/install?team=${aliceTeam.id}`);
    expect(install.status).toBe(403);
    expect(install.body.error.code).toBe('role_not_allowed');
    const connect = await member.post(`/api/teams/${aliceTeam.id}/repositories`, {
      fullName: 'alice-org/fast-qwen',
      benchmark: 'toy-decode',
    });
    expect(connect.status).toBe(403);
    expect(connect.body.error.message).toMatch(/owners and admins/);
    expect((await member.get(`/api/teams/${aliceTeam.id}/github/repositories`)).status).toBe(403);
    const token = (await alice.post(`/api/teams/${aliceTeam.id}/tokens`, { name: 'ci' })).body.token;
    const viaToken = await withToken(hub, token).post(`/api/teams/${aliceTeam.id}/repositories`, {
      fullName: 'alice-org/fast-qwen',
      benchmark: 'toy-decode',
    });
    expect(viaToken.status).toBe(403);
    expect(viaToken.body.error.code).toBe('token_not_allowed');
  });

  it("never lets a team reach another team's installation or repositories", async () => {
    // Bob substitutes Alice's installation id into his own install callback.
    const hijack = await install(hub, standin, bob, bobTeam.id, ALICE_INST);
    expect(hijack.setup.status).toBe(409);
    expect(hijack.setup.body.error.code).toBe('installation_taken');
    // Naming Alice's installation or repository directly finds nothing.
    const named = await bob.post(`/api/teams/${bobTeam.id}/repositories`, {
      installationId: ALICE_INST,
      fullName: 'alice-org/fast-qwen',
      benchmark: 'toy-decode',
    });
    expect(named.status).toBe(404);
    expect(named.body.error.code).toBe('installation_not_found');
    const noInstall = await bob.post(`/api/teams/${bobTeam.id}/repositories`, {
      fullName: 'alice-org/fast-qwen',
      benchmark: 'toy-decode',
    });
    expect(noInstall.status).toBe(409);
    expect(noInstall.body.error.code).toBe('github_app_not_installed');
    expect((await install(hub, standin, bob, bobTeam.id, BOB_INST)).setup.status).toBe(200);
    const notGranted = await bob.post(`/api/teams/${bobTeam.id}/repositories`, {
      fullName: 'alice-org/fast-qwen',
      benchmark: 'toy-decode',
    });
    expect(notGranted.status).toBe(404);
    expect(notGranted.body.error.code).toBe('repository_not_granted');
    // A setup callback without a state, for an installation Bob's team does not hold, is refused.
    const stateless = await bob
      .get(`/api/github/setup?installation_id=${ALICE_INST}&setup_action=update`)
      .set('Accept', 'application/json');
    expect(stateless.status).toBe(400);
    expect(stateless.body.error.code).toBe('install_state_invalid');
  });

  it('connects a repository (starting no run), changes its settings and disconnects it', async () => {
    const created = await alice.post(`/api/teams/${aliceTeam.id}/repositories`, {
      fullName: 'Alice-Org/Fast-Qwen',
      benchmark: 'toy-decode',
    });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({
      fullName: 'alice-org/fast-qwen',
      installationId: String(ALICE_INST),
      defaultBranch: 'main',
      engineFolder: 'engine',
      benchmark: 'toy-decode',
      autoRun: true,
      evaluation: 'public',
      connectedBy: 'conn-alice',
      lastDelivery: null,
    });
    const id = created.body.id;
    expect((await alice.get('/api/runs')).body.items).toEqual([]);
    expect((await alice.get('/api/submissions')).body.items).toEqual([]);

    const again = await alice.post(`/api/teams/${aliceTeam.id}/repositories`, {
      repositoryId: created.body.repositoryId,
      benchmark: 'toy-decode',
    });
    expect(again.status).toBe(409);
    expect(again.body.error.code).toBe('repository_already_connected');
    const training = await alice.post(`/api/teams/${aliceTeam.id}/repositories`, {
      fullName: 'alice-org/notes',
      benchmark: 'deep-recurrence',
    });
    expect(training.status).toBe(422);
    expect(training.body.error.code).toBe('benchmark_not_connectable');
    const both = await alice.post(`/api/teams/${aliceTeam.id}/repositories`, {
      fullName: 'alice-org/notes',
      repositoryId: 1,
    });
    expect(both.status).toBe(400);
    expect(both.body.error.code).toBe('invalid_request');

    // Members see connections (for Run now) but not the delivery log.
    expect((await member.get(`/api/teams/${aliceTeam.id}/repositories`)).body.items).toHaveLength(1);
    expect((await member.get(`/api/teams/${aliceTeam.id}/repositories/${id}/deliveries`)).status).toBe(403);

    const patched = await alice.patch(`/api/teams/${aliceTeam.id}/repositories/${id}`, {
      autoRun: false,
      evaluation: 'official',
      engineFolder: './src/engine/',
    });
    expect(patched.status).toBe(200);
    expect(patched.body).toMatchObject({
      autoRun: false,
      evaluation: 'official',
      engineFolder: 'src/engine',
    });
    const escape = await alice.patch(`/api/teams/${aliceTeam.id}/repositories/${id}`, {
      engineFolder: '../etc',
    });
    expect(escape.status).toBe(400);
    expect(escape.body.error.code).toBe('invalid_engine_folder');
    const badEval = await alice.patch(`/api/teams/${aliceTeam.id}/repositories/${id}`, {
      evaluation: 'secret',
    });
    expect(badEval.status).toBe(400);

    expect((await bob.get(`/api/teams/${aliceTeam.id}/repositories/${id}`)).status).toBe(404);
    expect((await member.delete(`/api/teams/${aliceTeam.id}/repositories/${id}`)).status).toBe(403);
    const gone = await alice.delete(`/api/teams/${aliceTeam.id}/repositories/${id}`);
    expect(gone.status).toBe(200);
    expect(gone.body).toMatchObject({ disconnected: true, fullName: 'alice-org/fast-qwen' });
    expect((await alice.get(`/api/teams/${aliceTeam.id}/repositories`)).body.items).toEqual([]);
  });

  it('checks the App JWT the hub signs: the stand-in refuses another issuer or key', async () => {
    const jwtCalls = standin.app.calls.filter((c) => /^(POST|GET) \/app\/installations\//.test(c));
    expect(jwtCalls.length).toBeGreaterThan(0); // the hub's JWTs were accepted
    const jwt = (iss: string) => {
      const now = Math.floor(Date.now() / 1000);
      const head = Buffer.from(JSON.stringify({ alg: 'RS256', typ: 'JWT' })).toString('base64url');
      const body = Buffer.from(JSON.stringify({ iat: now - 60, exp: now + 540, iss })).toString('base64url');
      return `${head}.${body}.${rsaSign('RSA-SHA256', Buffer.from(`${head}.${body}`), keys.privateKeyPem).toString('base64url')}`;
    };
    const get = (token: string) =>
      fetch(`${standin.url}/app/installations/${ALICE_INST}`, {
        headers: { authorization: `Bearer ${token}` },
      });
    expect((await get(jwt(APP_ID))).status).toBe(200);
    const wrongIssuer = await get(jwt('9999'));
    expect(wrongIssuer.status).toBe(401);
    expect((await wrongIssuer.json()).message).toMatch(/iss/);
    const otherKey = appKeys();
    const forged =
      jwt(APP_ID).split('.').slice(0, 2).join('.') +
      '.' +
      rsaSign('RSA-SHA256', Buffer.from('x'), otherKey.privateKeyPem).toString('base64url');
    expect((await get(forged)).status).toBe(401);
    expect((await get('a.b.c')).status).toBe(401);
  });
});

describe('GitHub App: unconfigured hub', () => {
  let hub: TestHub;
  beforeAll(async () => {
    hub = await startTestHub();
  });
  afterAll(async () => hub?.close());

  it('says what to set, and every other route answers 503 github_app_unconfigured', async () => {
    const status = await hub.http.get('/api/github/status');
    expect(status.status).toBe(200);
    expect(status.body.configured).toBe(false);
    expect(status.body.message).toMatch(
      /GITHUB_APP_ID.*GITHUB_APP_SLUG.*GITHUB_APP_PRIVATE_KEY.*GITHUB_WEBHOOK_SECRET/,
    );
    const { owner, team } = await ownerWithTeam(hub, 'unconf-owner');
    for (const res of [
      await owner.get(`/api/github/install?team=${team.id}`),
      await owner.get(`/api/teams/${team.id}/repositories`),
      await owner.post(`/api/teams/${team.id}/repositories`, { fullName: 'a/b' }),
      await hub.http.post('/api/github/webhooks').set('Content-Type', 'application/json').send('{}'),
    ]) {
      expect(res.status).toBe(503);
      expect(res.body.error.code).toBe('github_app_unconfigured');
      expect(res.body.error.message).toMatch(/set GITHUB_APP_ID/);
    }
  });
});
