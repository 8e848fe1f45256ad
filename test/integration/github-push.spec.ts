import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  appKeys,
  APP_ID,
  deliver,
  example,
  githubAppEnv,
  install,
  pushPayload,
  settled,
  sign,
  starterRepoFiles,
} from '../support/github-app';
import type { StandinRepo } from '../support/github-app-standin';
import { busyCheckers } from '../support/busy-checkers';
import { GithubStandin, startGithubStandin } from '../support/github-standin';
import { startTestHub, TestHub } from '../support/hub';
import { ownerWithTeam, signIn, TestUser } from '../support/users';

/**
 * Run on push, end to end against the GitHub stand-in: GitHub's example payloads, signed with the
 * test secret, go through the real webhook route, pg-boss, the tarball download and run creation.
 */
describe('GitHub App: run on push, Run now and Check delivery', () => {
  let standin: GithubStandin;
  let hub: TestHub;
  let owner: TestUser;
  let member: TestUser;
  let team: { id: string; inviteCode: string };
  let repo: StandinRepo;
  let connId: string;
  const INSTALLATION = 7001;

  const runsOf = async () =>
    (await owner.get('/api/runs?limit=100')).body.items as {
      id: string;
      mode: string;
      submissionName: string;
      submissionId: string;
    }[];
  const push = (branch = 'main', files = starterRepoFiles()) => {
    const sha = standin.app.commit('octo-team/fast-qwen', branch, files);
    return {
      sha,
      payload: pushPayload({
        repo: { id: repo.id, owner: 'octo-team', name: 'fast-qwen', defaultBranch: 'main' },
        branch,
        sha,
        installationId: INSTALLATION,
      }),
    };
  };

  beforeAll(async () => {
    standin = await startGithubStandin();
    const keys = appKeys();
    standin.app.configure({ appId: APP_ID, publicKey: keys.publicKey });
    hub = await startTestHub({
      env: { ...githubAppEnv(standin, keys.privateKeyPem), GITHUB_CHECKER_BUSY_RETRIES: '2' },
    });
    ({ owner, team } = await ownerWithTeam(hub, 'push-owner', 'Push Team'));
    member = await signIn(hub, 'push-member');
    expect((await member.post('/api/teams/join', { code: team.inviteCode })).status).toBe(200);
    standin.app.addInstallation(INSTALLATION, { login: 'octo-team', id: 99, type: 'Organization' });
    repo = standin.app.addRepo('octo-team/fast-qwen', starterRepoFiles());
    standin.app.grant(INSTALLATION, repo);
    expect((await install(hub, standin, owner, team.id, INSTALLATION)).setup.status).toBe(200);
    const conn = await owner.post(`/api/teams/${team.id}/repositories`, {
      fullName: 'octo-team/fast-qwen',
      benchmark: 'toy-decode',
    });
    expect(conn.status).toBe(201);
    connId = conn.body.id;
  });
  afterAll(async () => {
    await hub?.close();
    await standin?.close();
  });

  it('a push to the default branch submits the engine folder and starts exactly one public run', async () => {
    expect(await runsOf()).toHaveLength(0); // connecting alone started nothing
    const { sha, payload } = push();
    const id = randomUUID();
    const res = await deliver(hub, 'push', payload, { id });
    expect(res.status).toBe(202);
    expect(res.body).toMatchObject({ received: true, status: 'queued' });
    const d = await settled(owner, team.id, connId, id);
    expect(d).toMatchObject({
      event: 'push',
      status: 'succeeded',
      ref: 'refs/heads/main',
      commitSha: sha,
      attempts: 1,
    });
    const runs = await runsOf();
    expect(runs).toHaveLength(1);
    expect(runs[0]).toMatchObject({ id: d.runId, mode: 'public', submissionName: 'fast-qwen #1' });
    const sub = await owner.get(`/api/submissions/${d.submissionId}`);
    expect(sub.body).toMatchObject({
      name: 'fast-qwen #1',
      source: 'github',
      commitSha: sha,
      benchmarkId: 'toy-decode',
    });
    // Only the engine folder, re-rooted: no README, AGENTS.md or agent/ from the repository.
    expect(sub.body.files.map((f: { path: string }) => f.path).sort()).toEqual([
      'engine.py',
      'kernels/__init__.py',
    ]);
  });

  it('accepts a push payload of several megabytes (large pushes carry long commit lists)', async () => {
    const { payload } = push();
    const commits = Array.from({ length: 3000 }, (_, i) => ({
      id: `${i}`.padStart(40, 'a'),
      message: 'x'.repeat(1000),
    }));
    const big = { ...payload, commits };
    expect(JSON.stringify(big).length).toBeGreaterThan(3_000_000);
    const id = randomUUID();
    const res = await deliver(hub, 'push', big, { id });
    expect(res.status).toBe(202);
    expect((await settled(owner, team.id, connId, id)).status).toBe('succeeded');
  });

  it('the same delivery twice starts one run', async () => {
    const before = (await runsOf()).length;
    const { payload } = push();
    const id = randomUUID();
    const [a, b] = await Promise.all([
      deliver(hub, 'push', payload, { id }),
      deliver(hub, 'push', payload, { id }),
    ]);
    expect([a.status, b.status].sort()).toEqual([200, 202]);
    await settled(owner, team.id, connId, id);
    const again = await deliver(hub, 'push', payload, { id });
    expect(again.status).toBe(200);
    expect(again.body).toMatchObject({ duplicate: true, status: 'succeeded' });
    expect((await runsOf()).length).toBe(before + 1);
  });

  it('refuses a bad or missing signature before reading the payload, and records only the rejection', async () => {
    const before = (await runsOf()).length;
    const { payload } = push();
    const id = randomUUID();
    const wrong = await deliver(hub, 'push', payload, {
      id,
      signature: sign(JSON.stringify(payload), 'not-the-secret'),
    });
    expect(wrong.status).toBe(401);
    expect(wrong.body.error.code).toBe('signature_invalid');
    const missing = await deliver(hub, 'push', payload, { id, signature: null });
    expect(missing.status).toBe(401);
    expect(missing.body.error.code).toBe('signature_missing');
    // A tampered body with the original signature is refused too.
    const tampered = await hub.http
      .post('/api/github/webhooks')
      .set('Content-Type', 'application/json')
      .set('X-GitHub-Event', 'push')
      .set('X-GitHub-Delivery', id)
      .set('X-Hub-Signature-256', sign(JSON.stringify(payload)))
      .send(JSON.stringify({ ...payload, after: 'f'.repeat(40) }));
    expect(tampered.status).toBe(401);
    const rows = await hub.dataSource.query(
      `SELECT status, guid, payload, failure_code FROM github_deliveries WHERE github_delivery_id = $1 ORDER BY received_at`,
      [id],
    );
    expect(rows.map((r: { failure_code: string }) => r.failure_code)).toEqual([
      'signature_invalid',
      'signature_missing',
      'signature_invalid',
    ]);
    expect(
      rows.every(
        (r: { status: string; guid: null; payload: null }) =>
          r.status === 'rejected' && r.guid === null && r.payload === null,
      ),
    ).toBe(true);
    // The rejected id does not block the genuine delivery.
    expect((await deliver(hub, 'push', payload, { id })).status).toBe(202);
    await settled(owner, team.id, connId, id);
    expect((await runsOf()).length).toBe(before + 1);
  });

  it('a push to another branch does nothing and says why', async () => {
    const before = (await runsOf()).length;
    const { payload } = push('experiment');
    const id = randomUUID();
    expect((await deliver(hub, 'push', payload, { id })).status).toBe(202);
    const d = await settled(owner, team.id, connId, id);
    expect(d).toMatchObject({ status: 'ignored', runId: null, submissionId: null });
    expect(d.reason).toMatch(/refs\/heads\/experiment.*only pushes to the default branch \(main\)/);
    expect((await runsOf()).length).toBe(before);
  });

  it('a broken engine folder fails the delivery with the archive rule it breaks', async () => {
    const before = (await runsOf()).length;
    const files = starterRepoFiles();
    const { 'engine/engine.py': _engine, ...withoutEngine } = files;
    const noEngine = push('main', { ...withoutEngine, 'engine/model.py': 'x = 1\n' });
    const id1 = randomUUID();
    await deliver(hub, 'push', noEngine.payload, { id: id1 });
    const d1 = await settled(owner, team.id, connId, id1);
    expect(d1).toMatchObject({
      status: 'failed',
      failureCode: 'entrypoint',
      runId: null,
      submissionId: null,
      redeliverable: true,
    });
    expect(d1.reason).toMatch(/engine\.py/);

    const binary = push('main', { ...files, 'engine/weights.bin': 'not allowed' });
    const id2 = randomUUID();
    await deliver(hub, 'push', binary.payload, { id: id2 });
    const d2 = await settled(owner, team.id, connId, id2);
    expect(d2).toMatchObject({ status: 'failed', failureCode: 'extensions' });
    expect(d2.reason).toMatch(/weights\.bin/);

    const missingFolder = push('main', {
      'README.md': 'moved',
      'src/engine/engine.py': files['engine/engine.py'],
    });
    const id3 = randomUUID();
    await deliver(hub, 'push', missingFolder.payload, { id: id3 });
    const d3 = await settled(owner, team.id, connId, id3);
    expect(d3).toMatchObject({ status: 'failed', failureCode: 'entrypoint' });
    expect(d3.reason).toMatch(/engine folder "engine" does not exist.*src/);
    expect((await runsOf()).length).toBe(before);
  });

  it('GitHub down, then up: the fetch is retried with backoff and succeeds once', async () => {
    const before = (await runsOf()).length;
    const { payload } = push();
    const id = randomUUID();
    standin.app.failNext = 2;
    await deliver(hub, 'push', payload, { id });
    const d = await settled(owner, team.id, connId, id);
    expect(d).toMatchObject({ status: 'succeeded', attempts: 1 });
    expect(standin.app.failNext).toBe(0);
    expect((await runsOf()).length).toBe(before + 1);
  });

  it('GitHub unreachable after every retry fails the delivery; redeliver processes it again once', async () => {
    const before = (await runsOf()).length;
    const { payload } = push();
    const id = randomUUID();
    standin.app.failNext = 1000;
    await deliver(hub, 'push', payload, { id });
    const d = await settled(owner, team.id, connId, id);
    standin.app.failNext = 0;
    expect(d).toMatchObject({ status: 'failed', failureCode: 'github_unreachable', redeliverable: true });
    expect(d.reason).toMatch(/after 4 attempts/);
    expect((await runsOf()).length).toBe(before);

    expect(
      (await member.post(`/api/teams/${team.id}/repositories/${connId}/deliveries/${d.id}/redeliver`)).status,
    ).toBe(403);
    const again = await owner.post(
      `/api/teams/${team.id}/repositories/${connId}/deliveries/${d.id}/redeliver`,
    );
    expect(again.status).toBe(202);
    const done = await settled(owner, team.id, connId, id);
    expect(done).toMatchObject({ status: 'succeeded', attempts: 2 });
    expect((await runsOf()).length).toBe(before + 1);
    const twice = await owner.post(
      `/api/teams/${team.id}/repositories/${connId}/deliveries/${d.id}/redeliver`,
    );
    expect(twice.status).toBe(409);
    expect(twice.body.error.code).toBe('delivery_not_redeliverable');
    // GitHub's own "Redeliver" (same X-GitHub-Delivery) of a delivery that succeeded changes nothing.
    expect((await deliver(hub, 'push', payload, { id })).body).toMatchObject({
      duplicate: true,
      status: 'succeeded',
    });
    expect((await runsOf()).length).toBe(before + 1);
  });

  it('a push whose upload finds every checker busy is queued again with backoff and starts exactly one run once they are free', async () => {
    const before = (await runsOf()).length;
    const { sha, payload } = push();
    const id = randomUUID();
    const busy = busyCheckers(hub, 2); // the first try and the first retry are refused (Retry-After 1 s)
    try {
      expect((await deliver(hub, 'push', payload, { id })).status).toBe(202);
      // While it waits: queued again (not failed), saying why and when it tries next.
      let waiting: { status: string; failureCode: string | null; reason: string | null } | undefined;
      for (let i = 0; i < 100 && !waiting; i++) {
        const list = await owner.get(`/api/teams/${team.id}/repositories/${connId}/deliveries?limit=100`);
        const d = list.body.items.find((x: { githubDeliveryId: string }) => x.githubDeliveryId === id);
        if (d?.status === 'queued' && d.failureCode === 'checker_busy') waiting = d;
        else await new Promise((r) => setTimeout(r, 50));
      }
      expect(waiting).toMatchObject({ status: 'queued', failureCode: 'checker_busy' });
      expect(waiting!.reason).toMatch(
        /^Every upload checker of this hub was busy, so nothing was stored yet; trying again automatically at \d\d:\d\d:\d\d UTC \(in [12] s; retry [12] of 2\)\.$/,
      );
      // GitHub's own Redeliver meanwhile changes nothing: the queued delivery keeps its one job.
      expect((await deliver(hub, 'push', payload, { id })).body).toMatchObject({
        duplicate: true,
        status: 'queued',
      });
      const d = await settled(owner, team.id, connId, id, 30_000);
      expect(d).toMatchObject({ status: 'succeeded', commitSha: sha, attempts: 3, failureCode: null });
      expect(busy.refused()).toBe(2);
      const runs = await runsOf();
      expect(runs.length).toBe(before + 1);
      expect(runs.filter((r) => r.id === d.runId)).toHaveLength(1);
      expect(runs.filter((r) => r.submissionId === d.submissionId)).toHaveLength(1);
    } finally {
      busy.restore();
    }
  });

  it('checkers busy past every retry: the delivery fails saying so, nothing is stored, and a redelivery starts one run', async () => {
    const before = (await runsOf()).length;
    const submissionsBefore = (await owner.get('/api/submissions?limit=100')).body.items.length;
    const { payload } = push();
    const id = randomUUID();
    const busy = busyCheckers(hub, 1000);
    const d = await (async () => {
      try {
        await deliver(hub, 'push', payload, { id });
        return await settled(owner, team.id, connId, id, 30_000);
      } finally {
        busy.restore();
      }
    })();
    expect(busy.refused()).toBe(3); // the first try and GITHUB_CHECKER_BUSY_RETRIES=2 retries
    expect(d).toMatchObject({
      status: 'failed',
      failureCode: 'checker_busy',
      attempts: 3,
      redeliverable: true,
    });
    expect(d.reason).toMatch(
      /nothing was stored.* Gave up after 2 automatic retries while the hub's upload checkers stayed busy: redeliver it once the hub is less busy\.$/,
    );
    expect((await runsOf()).length).toBe(before);
    expect((await owner.get('/api/submissions?limit=100')).body.items.length).toBe(submissionsBefore);
    const again = await owner.post(
      `/api/teams/${team.id}/repositories/${connId}/deliveries/${d.id}/redeliver`,
    );
    expect(again.status).toBe(202);
    expect(await settled(owner, team.id, connId, id)).toMatchObject({ status: 'succeeded', attempts: 4 });
    expect((await runsOf()).length).toBe(before + 1);
  });

  it('Run now submits the latest commit once for any member, without changing the settings', async () => {
    const before = (await runsOf()).length;
    const sha = standin.app.commit('octo-team/fast-qwen', 'main', starterRepoFiles());
    const key = randomUUID();
    const res = await member
      .post(`/api/teams/${team.id}/repositories/${connId}/run`)
      .set('Idempotency-Key', key);
    expect(res.status).toBe(201);
    expect(res.body.delivery).toMatchObject({ event: 'run_now', status: 'succeeded', commitSha: sha });
    expect(res.body.run).toMatchObject({ mode: 'public', status: 'queued', createdBy: 'push-member' });
    const replay = await member
      .post(`/api/teams/${team.id}/repositories/${connId}/run`)
      .set('Idempotency-Key', key);
    expect(replay.status).toBe(200);
    expect(replay.body.run.id).toBe(res.body.run.id);
    expect((await runsOf()).length).toBe(before + 1);
    expect((await owner.get(`/api/teams/${team.id}/repositories/${connId}`)).body).toMatchObject({
      autoRun: true,
      evaluation: 'public',
    });
  });

  it('auto-run off ignores pushes; official evaluation starts official runs', async () => {
    const before = (await runsOf()).length;
    expect(
      (await member.patch(`/api/teams/${team.id}/repositories/${connId}`, { autoRun: false })).status,
    ).toBe(403);
    expect(
      (await owner.patch(`/api/teams/${team.id}/repositories/${connId}`, { autoRun: false })).body,
    ).toMatchObject({ autoRun: false });
    const off = push();
    const id1 = randomUUID();
    await deliver(hub, 'push', off.payload, { id: id1 });
    expect(await settled(owner, team.id, connId, id1)).toMatchObject({
      status: 'ignored',
      reason: expect.stringMatching(/Auto-run on push is off/),
    });
    expect((await runsOf()).length).toBe(before);

    await owner.patch(`/api/teams/${team.id}/repositories/${connId}`, {
      autoRun: true,
      evaluation: 'official',
    });
    const on = push();
    const id2 = randomUUID();
    await deliver(hub, 'push', on.payload, { id: id2 });
    const d = await settled(owner, team.id, connId, id2);
    expect(d.status).toBe('succeeded');
    expect((await owner.get(`/api/runs/${d.runId}`)).body).toMatchObject({ mode: 'official' });
    await owner.patch(`/api/teams/${team.id}/repositories/${connId}`, { evaluation: 'public' });
  });

  it('removing the repository from the App, or uninstalling it, disconnects', async () => {
    // A second repository on the same installation, removed through installation_repositories.
    const other = standin.app.addRepo('octo-team/other-engine', starterRepoFiles());
    standin.app.grant(INSTALLATION, other);
    const conn2 = await owner.post(`/api/teams/${team.id}/repositories`, {
      repositoryId: other.id,
      benchmark: 'toy-decode',
    });
    expect(conn2.status).toBe(201);
    const removed = example('installation_repositories', (e) => e.action === 'removed');
    removed.installation.id = INSTALLATION;
    removed.repositories_removed = [
      {
        id: other.id,
        node_id: 'x',
        name: 'other-engine',
        full_name: 'octo-team/other-engine',
        private: true,
      },
    ];
    expect((await deliver(hub, 'installation_repositories', removed)).status).toBe(202);
    await waitFor(
      async () => (await owner.get(`/api/teams/${team.id}/repositories`)).body.items.length === 1,
    );

    const deleted = example('installation', (e) => e.action === 'deleted');
    deleted.installation.id = INSTALLATION;
    expect((await deliver(hub, 'installation', deleted)).status).toBe(202);
    await waitFor(
      async () => (await owner.get(`/api/teams/${team.id}/repositories`)).body.items.length === 0,
    );
    expect((await owner.get(`/api/teams/${team.id}/github/repositories`)).body.installations).toEqual([]);
    // A push for the disconnected repository is recorded and ignored.
    const { payload } = push();
    const id = randomUUID();
    await deliver(hub, 'push', payload, { id });
    await waitFor(async () => {
      const rows = await hub.dataSource.query(
        `SELECT status, reason FROM github_deliveries WHERE guid = $1`,
        [id],
      );
      return rows[0]?.status === 'ignored' && /not connected/.test(rows[0].reason);
    });
  });
});

async function waitFor(check: () => Promise<boolean>, timeoutMs = 10_000): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > until) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 100));
  }
}
