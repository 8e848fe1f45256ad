import path from 'node:path';
import { randomBytes, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BenchmarkDefinition, RunAssign } from '@dryft/libs';
import { hashToken, loadBenchmarkDefinitions } from '@dryft/libs/node';
import { Clock } from '../../apps/api/src/common/clock';
import { RunQueue } from '../../apps/api/src/runs/run-queue';
import { RunsRepository } from '../../apps/api/src/runs/runs.repository';
import { until } from '../support/agent-helpers';
import { toyStarter } from '../support/archives';
import { FakeAgent } from '../support/fake-agent';
import { ROOT, startTestHub, TestHub } from '../support/hub';
import { TestAgent } from '../support/test-agent';
import { ownerWithTeam, signIn, TestUser } from '../support/users';

const NONCE = 'ab'.repeat(16);
const REASON = 'the agent fleet changed to the new boxes';

/** toy-decode with a daily limit of 2 official runs (the re-runs must not take them). */
function definitions(): BenchmarkDefinition[] {
  const defs = loadBenchmarkDefinitions(path.join(ROOT, 'config/benchmarks'));
  return defs.map((d) => (d.id === 'toy-decode' ? { ...d, dailyLimits: { official: 2 } } : d));
}

/**
 * Issue 33 item 1: an organizer re-runs one run (fresh prompts, or the stored ones replayed for an
 * audit) or every eligible best run of a benchmark, audited with a reason; re-runs go after team
 * runs, take nothing of a team's daily or queued-runs limits, and never rank on the live board.
 */
describe('re-runs by organizers', () => {
  let hub: TestHub;
  let agent: TestAgent;
  let org: TestUser;
  let ann: TestUser;
  let bob: TestUser;
  let annRun: string;
  let annPublic: string;
  let bobRun: string;
  let annSubmission: string;

  /** Claim and succeed with `score`, an interval of ±3 and (official) a stored nonce. */
  const land = async (runId: string, score: number) => {
    await agent.claim(runId);
    await agent.finish(runId, {
      status: 'succeeded',
      score,
      interval: { low: score - 3, high: score + 3, halfWidth: 3, level: 0.95 },
      pairs: 6,
      promptNonce: NONCE,
      workloads: [],
      message: 'All checks passed.',
    });
  };
  const start = async (user: TestUser, submission: string, mode: 'public' | 'official') => {
    const r = await user.post(`/api/submissions/${submission}/runs`, { mode, confirm: true });
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    return r.body.run.id as string;
  };
  const audit = async (action: string) =>
    (await org.get(`/api/admin/audit?action=${action}`)).body.items as {
      target: { kind: string; id: string };
      reason: string;
      details: Record<string, unknown>;
    }[];

  beforeAll(async () => {
    hub = await startTestHub({
      env: { ADMIN_LOGINS: 'rr-org', TEAM_QUEUED_RUNS: '2' },
      definitions: definitions(),
    });
    agent = new TestAgent(hub);
    org = await signIn(hub, 'rr-org');
    ann = (await ownerWithTeam(hub, 'rr-ann', 'Ann Team')).owner;
    bob = (await ownerWithTeam(hub, 'rr-bob', 'Bob Team')).owner;
    const upload = async (u: TestUser) =>
      (
        await u.upload(
          '/api/submissions',
          { benchmark: 'toy-decode' },
          { name: 'e.tar.gz', content: await toyStarter() },
        )
      ).body.submission.id as string;
    annSubmission = await upload(ann);
    const bobSubmission = await upload(bob);
    annRun = await start(ann, annSubmission, 'official');
    await land(annRun, 130);
    annPublic = await start(ann, annSubmission, 'public');
    await agent.complete(annPublic, 101);
    bobRun = await start(bob, bobSubmission, 'official');
    await land(bobRun, 120);
  });
  afterAll(async () => {
    await new Promise((r) => setTimeout(r, 300));
    await hub?.close();
  });

  it('is refused with a code that says what to change, queuing and recording nothing', async () => {
    const before = (await hub.dataSource.query('SELECT count(*)::int AS n FROM runs'))[0].n;
    const baseline = await hub.app.get(RunsRepository).insert({
      benchmarkId: 'toy-decode',
      submissionId: null,
      teamId: null,
      createdBy: org.id,
      mode: 'baseline',
      hardware: 'cpu',
      status: 'canceled',
      rulesVersion: 1,
      runTimeLimitSeconds: 60,
      spec: (await hub.dataSource.query('SELECT spec FROM runs WHERE id = $1', [annRun]))[0].spec,
      quotaBucket: 'baseline',
      quotaDay: '2026-12-02',
      quotaHolder: 'organizer',
    });
    const cases: [TestUser, string, object, number, string][] = [
      [ann, `/api/admin/runs/${annRun}/rerun`, { reason: REASON }, 403, 'organizers_only'],
      [ann, '/api/admin/benchmarks/toy-decode/reruns', { reason: REASON }, 403, 'organizers_only'],
      [ann, '/api/admin/benchmarks/toy-decode/final-board', { reason: REASON }, 403, 'organizers_only'],
      [
        ann,
        '/api/admin/benchmarks/toy-decode/final-board/publish',
        { reason: REASON },
        403,
        'organizers_only',
      ],
      [org, `/api/admin/runs/${randomUUID()}/rerun`, { reason: REASON }, 404, 'run_not_found'],
      [org, `/api/admin/runs/${baseline.id}/rerun`, { reason: REASON }, 409, 'no_submission'],
      [org, `/api/admin/runs/${annRun}/rerun`, {}, 400, 'invalid_request'],
      [org, `/api/admin/runs/${annRun}/rerun`, { reason: '  ' }, 400, 'invalid_request'],
      [
        org,
        `/api/admin/runs/${annPublic}/rerun`,
        { reason: REASON, replayPrompts: true },
        409,
        'no_stored_nonce',
      ],
      [org, '/api/admin/benchmarks/nope/reruns', { reason: REASON }, 404, 'benchmark_not_found'],
      [org, '/api/admin/benchmarks/recurrence-cpu/reruns', { reason: REASON }, 409, 'no_eligible_runs'],
      [org, '/api/admin/benchmarks/toy-decode/reruns', { reason: 'x' }, 400, 'invalid_request'],
    ];
    for (const [user, url, body, status, code] of cases) {
      const res = await user.post(url, body);
      expect([url, res.status, res.body.error?.code]).toEqual([url, status, code]);
      expect(res.body.error.message.length).toBeGreaterThan(10);
    }
    expect((await ann.get('/api/admin/benchmarks/toy-decode/reruns')).status).toBe(403);
    const after = (await hub.dataSource.query('SELECT count(*)::int AS n FROM runs'))[0].n;
    expect(after).toBe(before + 1); // the baseline row this test inserted, nothing else
    expect(await audit('run.rerun')).toEqual([]);
  });

  it('re-runs one run as a new linked run, audited; it draws fresh prompts and does not rank', async () => {
    const res = await org.post(`/api/admin/runs/${annRun}/rerun`, { reason: REASON });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    const id = res.body.runId as string;
    expect(res.body.batch).toMatchObject({
      kind: 'single',
      reason: REASON,
      createdBy: 'rr-org',
      replayPrompts: false,
      counts: { queued: 1, running: 0, succeeded: 0 },
      done: false,
      pairs: [{ sourceRunId: annRun, rerunId: id, teamName: 'Ann Team', sourceScore: 130, status: 'queued' }],
    });
    const view = (await org.get(`/api/admin/runs/${id}`)).body;
    expect(view).toMatchObject({ rerunOf: annRun, mode: 'official', status: 'queued', createdBy: 'rr-org' });
    // the team sees its run re-run, linked to its source
    expect((await ann.get(`/api/runs/${id}`)).body.rerunOf).toBe(annRun);
    const [row] = await hub.dataSource.query(
      'SELECT spec, quota_bucket, submission_id FROM runs WHERE id = $1',
      [id],
    );
    expect(row.spec.promptNonce).toBeNull();
    expect(row.quota_bucket).toBe('rerun');
    expect(row.submission_id).toBe(annSubmission);
    expect((await audit('run.rerun'))[0]).toMatchObject({
      target: { kind: 'run', id: annRun },
      reason: REASON,
      details: { rerunId: id, replayPrompts: false, mode: 'official' },
    });

    // a higher score of the re-run leaves the live board as it was
    const boardBefore = (await hub.http.get('/api/leaderboards/toy-decode')).body;
    await land(id, 160);
    const board = (await hub.http.get('/api/leaderboards/toy-decode')).body;
    expect(board.entries.map((e: { runId: string; score: number }) => [e.runId, e.score])).toEqual(
      boardBefore.entries.map((e: { runId: string; score: number }) => [e.runId, e.score]),
    );
    expect(board.entries[0]).toMatchObject({ runId: annRun, score: 130 });
    const rank = (await ann.get(`/api/runs/${id}/rank`)).body;
    expect(rank).toMatchObject({ eligible: false, rank: null });
    expect(rank.reason).toContain(`re-run of run ${annRun}`);
    const refund = await org.post(`/api/admin/runs/${id}/refund`, { reason: 'nothing to give back' });
    expect([refund.status, refund.body.error.code]).toEqual([409, 'not_a_team_run']);
    const progress = (await org.get('/api/admin/benchmarks/toy-decode/reruns')).body.items[0];
    expect(progress).toMatchObject({ done: true, counts: { succeeded: 1 } });
    expect(progress.pairs[0]).toMatchObject({ sourceScore: 130, score: 160, status: 'succeeded' });
  });

  it('never counts against the daily limit or the queued-runs limit, and goes after team runs', async () => {
    const quota = async () =>
      ((await ann.get('/api/quota?benchmark=toy-decode')).body as { bucket: string }[]).find(
        (q) => q.bucket === 'official',
      );
    expect(await quota()).toMatchObject({ limit: 2, used: 1, remaining: 1, refunded: 0 });
    // two queued re-runs of Ann's run: the team's queue (limit 2 here) is still empty for it
    const first = await org.post(`/api/admin/runs/${annRun}/rerun`, { reason: REASON });
    const second = await org.post(`/api/admin/runs/${annRun}/rerun`, { reason: REASON });
    expect([first.status, second.status]).toEqual([201, 201]);
    expect(await quota()).toMatchObject({ limit: 2, used: 1, remaining: 1, refunded: 0 });
    const teamRun = await start(ann, annSubmission, 'public');
    const teamRun2 = await start(ann, annSubmission, 'official');
    // dispatch: the team's runs first (queued after the re-runs), then the re-runs, oldest first
    const claimed: string[] = [];
    const queue = hub.app.get(RunQueue);
    for (let i = 0; i < 4; i++) {
      const now = hub.app.get(Clock).now();
      const run = await queue.markAssigned({
        agentId: agent.id,
        agentName: 'order',
        slot: i,
        benchmarkIds: ['toy-decode'],
        allowOfficial: true,
        allowPublic: true,
        hardware: 'cpu',
        downloadTokenHash: hashToken(randomBytes(32).toString('base64url')),
        now,
        leaseUntil: new Date(now.getTime() + 60_000),
      });
      claimed.push(run!.id);
    }
    expect(claimed).toEqual([teamRun, teamRun2, first.body.runId, second.body.runId]);
    for (const id of claimed) await agent.finish(id, { status: 'succeeded', score: 100, workloads: [] });
    expect(await quota()).toMatchObject({ limit: 2, used: 2, remaining: 0, refunded: 0 });
  });

  it('re-runs every eligible best run of a benchmark, one per team, audited with its progress', async () => {
    const res = await org.post('/api/admin/benchmarks/toy-decode/reruns', { reason: 'rules v1 sanity pass' });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    expect(res.body).toMatchObject({ kind: 'bulk', counts: { queued: 2 }, done: false });
    // each team's best official run (Ann's 130, not her re-runs' 160 nor her later 100), best first
    expect(res.body.pairs.map((p: { sourceRunId: string }) => p.sourceRunId)).toEqual([annRun, bobRun]);
    const listed = (await org.get('/api/admin/benchmarks/toy-decode/reruns')).body.items;
    expect(listed[0].id).toBe(res.body.id);
    expect((await audit('benchmark.rerun_best'))[0]).toMatchObject({
      target: { kind: 'benchmark', id: 'toy-decode' },
      reason: 'rules v1 sanity pass',
      details: { batchId: res.body.id, runs: 2, sourceRunIds: [annRun, bobRun] },
    });
    for (const p of res.body.pairs as { rerunId: string }[]) await land(p.rerunId, 125);
    const done = (await org.get('/api/admin/benchmarks/toy-decode/reruns')).body.items[0];
    expect(done).toMatchObject({ done: true, counts: { queued: 0, running: 0, succeeded: 2 } });
  });

  it('replays the stored prompts for an audit: the agent receives the source run’s nonce', async () => {
    const token = (await org.post('/api/admin/agents', { name: 'rr-fake' })).body.token as string;
    const fake = new FakeAgent(hub.baseUrl, token);
    try {
      expect((await fake.ready()).ok).toBe(true);
      const replay = await org.post(`/api/admin/runs/${annRun}/rerun`, {
        reason: 'audit',
        replayPrompts: true,
      });
      expect(replay.status, JSON.stringify(replay.body)).toBe(201);
      expect(replay.body.batch.replayPrompts).toBe(true);
      const assign = await until(
        'assignment',
        () => fake.assigned.find((a: RunAssign) => a.runId === replay.body.runId),
        10_000,
      );
      expect(assign.spec.kind === 'decode' && assign.spec.promptNonce).toBe(NONCE);
      expect((await audit('run.rerun'))[0].details).toMatchObject({ replayPrompts: true });
    } finally {
      fake.socket.close();
    }
  });
});
