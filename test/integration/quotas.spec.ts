import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { StorageView } from '@dryft/libs';
import { toyStarter } from '../support/archives';
import { ROOT, startTestHub, TestHub } from '../support/hub';
import { TestAgent } from '../support/test-agent';
import { ownerWithTeam, signIn, TestUser } from '../support/users';

/**
 * Issue 30, item 3: the quotas that protect the hub, per team, each refused with what is used and
 * when it resets, and each allowed just under its limit: submissions a day (429 upload_quota),
 * stored bytes (409 storage_quota), public decode runs a day where the definition sets none (429
 * public_run_quota), runs waiting in the queue (409 queued_runs_limit). Refusals store nothing.
 */
const LIMITS = {
  TEAM_UPLOADS_PER_DAY: '3',
  // 51,200 bytes per team.
  TEAM_STORAGE_MIB: String(50 / 1024),
  TEAM_PUBLIC_RUNS_PER_DAY: '3',
  TEAM_QUEUED_RUNS: '2',
};
const STORAGE_LIMIT = 50 * 1024;
const nextUtcMidnight = () => {
  const d = new Date();
  return new Date(Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate() + 1)).toISOString();
};

describe('quotas per team: uploads a day, stored bytes, public runs a day, queued runs', () => {
  let hub: TestHub;
  let agent: TestAgent;
  let organizer: TestUser;
  let toy: Buffer;
  const sample = readFileSync(path.join(ROOT, 'starters/deep-recurrence/submission.py'));
  /** The sample submission.py padded with a comment to exactly `size` bytes. */
  const sampleOf = (size: number) => {
    const pad = size - sample.length - 2;
    return Buffer.concat([sample, Buffer.from(`\n#${'x'.repeat(pad)}`)]);
  };
  const uploadToy = (user: TestUser) =>
    user.upload('/api/submissions', { benchmark: 'toy-decode' }, { name: 'engine.tar.gz', content: toy });
  const uploadFile = (user: TestUser, content: Buffer) =>
    user.upload('/api/submissions', { benchmark: 'deep-recurrence' }, { name: 'submission.py', content });
  const count = async (user: TestUser) =>
    ((await user.get('/api/submissions?limit=100')).body.items as unknown[]).length;

  beforeAll(async () => {
    hub = await startTestHub({ env: { ADMIN_LOGINS: 'quota-org', ...LIMITS } });
    agent = new TestAgent(hub);
    organizer = await signIn(hub, 'quota-org');
    toy = await toyStarter();
  });
  afterAll(async () => hub?.close());

  it('stores up to TEAM_UPLOADS_PER_DAY submissions a day, then answers 429 upload_quota with the use and the reset; other teams are not affected', async () => {
    const { owner } = await ownerWithTeam(hub, 'quota-uploads');
    for (let i = 0; i < 3; i++) expect((await uploadToy(owner)).status).toBe(201);
    const refused = await uploadToy(owner);
    expect(refused.status).toBe(429);
    expect(refused.body.error.code).toBe('upload_quota');
    const resetsAt = nextUtcMidnight();
    expect(refused.body.error.message).toBe(
      `Your team stored 3 submissions today (UTC), the limit of 3 a day (uploads and repository pushes together); it resets at ${resetsAt}. Start runs from the submissions you already have until then.`,
    );
    expect(refused.body.error.details).toEqual({ used: 3, limit: 3, resetsAt });
    expect(await count(owner)).toBe(3);
    const { owner: other } = await ownerWithTeam(hub, 'quota-uploads-other');
    expect((await uploadToy(other)).status).toBe(201);
  });

  it('stores up to TEAM_STORAGE_MIB of submissions (exactly the limit is allowed), then answers 409 storage_quota', async () => {
    const { owner } = await ownerWithTeam(hub, 'quota-storage');
    expect((await uploadFile(owner, sampleOf(30_000))).status).toBe(201);
    // Exactly up to the limit: 30,000 + 21,200 = 51,200 bytes.
    expect((await uploadFile(owner, sampleOf(STORAGE_LIMIT - 30_000))).status).toBe(201);
    const refused = await uploadFile(owner, sample);
    expect(refused.status).toBe(409);
    expect(refused.body.error.code).toBe('storage_quota');
    expect(refused.body.error.message).toBe(
      `Your team stores 50.0 KiB of submissions (51200 bytes); this ${sample.length}-byte upload would pass the limit of 50.0 KiB per team. This limit does not reset by itself: ask the hub's organizer to raise it (TEAM_STORAGE_MIB).`,
    );
    expect(refused.body.error.details).toEqual({
      usedBytes: STORAGE_LIMIT,
      limitBytes: STORAGE_LIMIT,
      uploadBytes: sample.length,
      resetsAt: null,
    });
    expect(await count(owner)).toBe(2);
  });

  it('starts up to TEAM_PUBLIC_RUNS_PER_DAY public decode runs a day, then answers 429 public_run_quota; GET /api/quota shows the cap', async () => {
    const { owner } = await ownerWithTeam(hub, 'quota-public');
    const sub = (await uploadToy(owner)).body.submission.id;
    for (let i = 0; i < 3; i++) {
      const started = await owner.post(`/api/submissions/${sub}/runs`, { mode: 'public' });
      expect(started.status).toBe(201);
      expect(started.body.quota).toMatchObject({ bucket: 'public', limit: 3, used: i + 1, remaining: 2 - i });
      // Taken by an agent at once, so the queue cap (2) is not what stops the fourth.
      await agent.complete(started.body.run.id, 100);
    }
    const refused = await owner.post(`/api/submissions/${sub}/runs`, { mode: 'public' });
    expect(refused.status).toBe(429);
    expect(refused.body.error.code).toBe('public_run_quota');
    const resetsAt = nextUtcMidnight();
    expect(refused.body.error.message).toBe(
      `Your team has used all 3 public runs of toy-decode for today (UTC), this hub's limit per team; it resets at ${resetsAt}.`,
    );
    expect(refused.body.error.details).toEqual({ bucket: 'public', limit: 3, used: 3, resetsAt });
    const quota = await owner.get('/api/quota?benchmark=toy-decode');
    expect(quota.body).toContainEqual(
      expect.objectContaining({ bucket: 'public', limit: 3, used: 3, remaining: 0 }),
    );
    // Official runs are not public runs: toy-decode sets no official limit.
    expect(
      (await owner.post(`/api/submissions/${sub}/runs`, { mode: 'official', confirm: true })).status,
    ).toBe(201);
  });

  it('queues up to TEAM_QUEUED_RUNS runs of a team at once, then answers 409 queued_runs_limit; a run leaving the queue makes room', async () => {
    const { owner } = await ownerWithTeam(hub, 'quota-queue');
    const sub = (await uploadToy(owner)).body.submission.id;
    const official = () => owner.post(`/api/submissions/${sub}/runs`, { mode: 'official', confirm: true });
    const first = await official();
    expect(first.status).toBe(201);
    expect((await official()).status).toBe(201);
    const refused = await official();
    expect(refused.status).toBe(409);
    expect(refused.body.error.code).toBe('queued_runs_limit');
    expect(refused.body.error.message).toBe(
      "Your team has 2 runs waiting in the queue, this hub's limit of 2 per team. Start this one when one of them has been taken by an agent or canceled; nothing was queued or counted.",
    );
    expect(refused.body.error.details).toEqual({ used: 2, limit: 2, resetsAt: null });
    const runs = await hub.dataSource.query(`SELECT count(*)::int AS n FROM runs WHERE submission_id = $1`, [
      sub,
    ]);
    expect(runs[0].n).toBe(2);
    // Another team queues independently.
    const { owner: other } = await ownerWithTeam(hub, 'quota-queue-other');
    const otherSub = (await uploadToy(other)).body.submission.id;
    expect((await other.post(`/api/submissions/${otherSub}/runs`, { mode: 'public' })).status).toBe(201);
    // An agent takes one: there is room for one more.
    await agent.claim(first.body.run.id);
    expect((await official()).status).toBe(201);
    expect((await official()).body.error.code).toBe('queued_runs_limit');
  });

  it('decides under the team lock: concurrent requests for the last places take exactly those places', async () => {
    const { owner } = await ownerWithTeam(hub, 'quota-race');
    for (let i = 0; i < 2; i++) expect((await uploadToy(owner)).status).toBe(201);
    // One upload left today: three at once, one is stored.
    const uploads = await Promise.all([0, 1, 2].map(() => uploadToy(owner)));
    expect(uploads.map((u) => u.status).sort()).toEqual([201, 429, 429]);
    expect(await count(owner)).toBe(3);
    // Two queue places: four official runs at once, two are queued.
    const sub = uploads.find((u) => u.status === 201)!.body.submission.id;
    const runs = await Promise.all(
      [0, 1, 2, 3].map(() => owner.post(`/api/submissions/${sub}/runs`, { mode: 'official', confirm: true })),
    );
    expect(runs.map((r) => r.status).sort()).toEqual([201, 201, 409, 409]);
    const queued = await hub.dataSource.query(
      `SELECT count(*)::int AS n FROM runs WHERE submission_id = $1 AND status = 'queued'`,
      [sub],
    );
    expect(queued[0].n).toBe(2);
  });

  it("shows the organizer each team's use against the limits in the storage table", async () => {
    const storage = (await organizer.get('/api/admin/storage')).body as StorageView;
    expect(storage.limits).toEqual({
      uploadsPerDay: 3,
      storageLimitBytes: STORAGE_LIMIT,
      publicRunsPerDay: 3,
      queuedRuns: 2,
      resetsAt: nextUtcMidnight(),
    });
    const team = (slug: string) => storage.teams.find((t) => t.slug.startsWith(slug))!;
    expect(team('quota-uploads-team')).toMatchObject({ submissions: 3, uploadsToday: 3, queuedRuns: 0 });
    expect(team('quota-storage-team')).toMatchObject({ submissions: 2, artifactBytes: STORAGE_LIMIT });
    expect(team('quota-queue-team')).toMatchObject({ uploadsToday: 1, queuedRuns: 2 });
    const participant = (await ownerWithTeam(hub, 'quota-nosy')).owner;
    expect((await participant.get('/api/admin/storage')).status).toBe(403);
  });
});
