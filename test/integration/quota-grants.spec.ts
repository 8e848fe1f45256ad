import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { toyStarter } from '../support/archives';
import { ROOT, startTestHub, TestHub } from '../support/hub';
import { TestAgent } from '../support/test-agent';
import { ownerWithTeam, signIn, TestUser } from '../support/users';

/**
 * Issue 33, "quota grants": an organizer gives a team (or, where a benchmark ranks users, a user)
 * extra runs of a daily limit for a day, or refunds one run, with a reason; the team sees it in its
 * quota; both are in the audit log; participants cannot.
 */
describe('quota grants and refunds by organizers', () => {
  let hub: TestHub;
  let agent: TestAgent;
  let organizer: TestUser;
  const sample = readFileSync(path.join(ROOT, 'starters/deep-recurrence/submission.py'));

  beforeAll(async () => {
    // toy-decode's definition sets no daily limit: its public runs get the hub's cap, 3 here
    hub = await startTestHub({ env: { ADMIN_LOGINS: 'qg-organizer', TEAM_PUBLIC_RUNS_PER_DAY: '3' } });
    agent = new TestAgent(hub);
    organizer = await signIn(hub, 'qg-organizer');
  });
  afterAll(async () => hub?.close());

  const quota = async (user: TestUser, benchmark: string, bucket: string) =>
    ((await user.get(`/api/quota?benchmark=${benchmark}`)).body as { bucket: string }[]).find(
      (q) => q.bucket === bucket,
    );
  const audit = async (action: string) =>
    (await organizer.get(`/api/admin/audit?action=${action}`)).body.items as {
      target: { kind: string; id: string };
      reason: string;
      details: Record<string, unknown>;
    }[];

  it('a team given 2 extra public runs for today may start 5 of toy-decode’s 3, and sees the grant', async () => {
    const { owner, team } = await ownerWithTeam(hub, 'qg-ann', 'Granted');
    const up = await owner.upload(
      '/api/submissions',
      { benchmark: 'toy-decode' },
      { name: 'e.tar.gz', content: await toyStarter() },
    );
    const start = () => owner.post(`/api/submissions/${up.body.submission.id}/runs`, { mode: 'public' });
    for (let i = 0; i < 3; i++) {
      const r = await start();
      expect(r.status, JSON.stringify(r.body)).toBe(201);
      await agent.complete(r.body.run.id, 100 + i);
    }
    expect((await start()).status).toBe(429);

    const grant = await organizer.post('/api/admin/benchmarks/toy-decode/quota-grants', {
      team: team.slug,
      bucket: 'public',
      extraRuns: 2,
      reason: 'our agent lost two of their runs',
    });
    expect(grant.status).toBe(201);
    expect(grant.body).toMatchObject({
      benchmarkId: 'toy-decode',
      holder: { kind: 'team', id: team.id, name: 'Granted' },
      bucket: 'public',
      extraRuns: 2,
      grantedBy: 'qg-organizer',
    });
    expect(await quota(owner, 'toy-decode', 'public')).toMatchObject({
      limit: 5,
      used: 3,
      remaining: 2,
      granted: 2,
    });
    const sixth = await start();
    expect(sixth.status).toBe(201);
    expect(sixth.body.quota).toMatchObject({ limit: 5, used: 4, remaining: 1, granted: 2 });
    await agent.complete(sixth.body.run.id, 99);
    expect((await start()).status).toBe(201);
    const eighth = await start();
    expect(eighth.status).toBe(429);
    expect(eighth.body.error.code).toBe('public_run_quota');
    expect(eighth.body.error.message).toContain(
      'used all 5 public runs of toy-decode for today (UTC) (2 of them granted by an organizer)',
    );

    const listed = await organizer.get('/api/admin/benchmarks/toy-decode/quota-grants');
    expect(listed.body.map((g: { id: string }) => g.id)).toContain(grant.body.id);
    expect((await audit('quota.grant'))[0]).toMatchObject({
      target: { kind: 'team', id: team.id },
      reason: 'our agent lost two of their runs',
      details: { bucket: 'public', extraRuns: 2, name: 'Granted' },
    });
    // another team's limit is untouched
    const { owner: other } = await ownerWithTeam(hub, 'qg-other', 'Not Granted');
    expect(await quota(other, 'toy-decode', 'public')).toMatchObject({ limit: 3, granted: 0 });
  });

  it('grants to a user where the benchmark ranks users, and refunds one run with a reason', async () => {
    const { owner } = await ownerWithTeam(hub, 'qg-bob', 'Bob Alone');
    const up = await owner.upload(
      '/api/submissions',
      { benchmark: 'deep-recurrence' },
      { name: 'submission.py', content: sample },
    );
    const hard = () =>
      owner.post(`/api/submissions/${up.body.submission.id}/runs`, {
        mode: 'official',
        confirm: true,
        tier: 'hard',
      });
    const first = await hard();
    expect(first.status).toBe(201);
    await agent.complete(first.body.run.id, 50);
    expect((await hard()).status).toBe(429);

    const refund = await organizer.post(`/api/admin/runs/${first.body.run.id}/refund`, {
      reason: 'a slow agent cost it half its hour',
    });
    expect(refund.status).toBe(200);
    expect(refund.body).toMatchObject({
      id: first.body.run.id,
      quotaRefunded: true,
      status: 'succeeded',
      score: 50,
    });
    expect(await quota(owner, 'deep-recurrence', 'hard')).toMatchObject({ limit: 1, used: 0, refunded: 1 });
    const again = await organizer.post(`/api/admin/runs/${first.body.run.id}/refund`, { reason: 'twice' });
    expect(again.status).toBe(409);
    expect(again.body.error.code).toBe('already_refunded');
    expect((await audit('run.refund'))[0]).toMatchObject({
      target: { kind: 'run', id: first.body.run.id },
      reason: 'a slow agent cost it half its hour',
      details: { bucket: 'hard' },
    });
    const second = await hard();
    expect(second.status).toBe(201);

    const byUser = await organizer.post('/api/admin/benchmarks/deep-recurrence/quota-grants', {
      user: 'qg-bob',
      bucket: 'hard',
      extraRuns: 1,
      reason: 'a second try at the hour',
    });
    expect(byUser.status).toBe(201);
    expect(byUser.body.holder).toMatchObject({ kind: 'user', id: owner.id, name: 'qg-bob' });
    expect(await quota(owner, 'deep-recurrence', 'hard')).toMatchObject({ limit: 2, used: 1, granted: 1 });
  });

  it('refuses what cannot be granted, saying what to change, and participants cannot grant', async () => {
    const { owner, team } = await ownerWithTeam(hub, 'qg-carl', 'Refused');
    const post = (body: object, benchmark = 'toy-decode', user = organizer) =>
      user.post(`/api/admin/benchmarks/${benchmark}/quota-grants`, body);
    const ok = { team: team.slug, bucket: 'public', extraRuns: 1, reason: 'testing refusals' };
    const cases: [object, string, number, string, string?][] = [
      [{ ...ok, bucket: 'hard' }, 'unknown_bucket', 400, 'use one of: public, official'],
      [{ ...ok, bucket: 'official' }, 'bucket_unlimited', 400, 'no daily limit'],
      [{ ...ok, extraRuns: 0 }, 'invalid_request', 400, 'at least 1'],
      [{ ...ok, extraRuns: 101 }, 'invalid_request', 400, 'at most 100'],
      [{ ...ok, day: '2020-01-01' }, 'day_in_past', 400, 'is over'],
      [{ ...ok, day: 'tomorrow' }, 'invalid_request', 400, 'YYYY-MM-DD'],
      [{ ...ok, team: 'no-such-team' }, 'team_not_found', 404, 'no-such-team'],
      [{ ...ok, user: 'qg-carl' }, 'invalid_request', 400, 'exactly one of'],
      [{ bucket: 'public', extraRuns: 1, reason: 'no holder' }, 'invalid_request', 400, 'exactly one of'],
      [{ ...ok, reason: 'x' }, 'invalid_request', 400, 'say why'],
      [
        { user: 'qg-carl', bucket: 'public', extraRuns: 1, reason: 'wrong holder' },
        'holder_mismatch',
        400,
        'counts runs per team',
      ],
      [{ ...ok, bucket: 'hard' }, 'holder_mismatch', 400, 'counts runs per user', 'deep-recurrence'],
      [{ ...ok }, 'benchmark_not_found', 404, '', 'no-such-benchmark'],
    ];
    for (const [body, code, status, words, benchmark] of cases) {
      const res = await post(body, benchmark ?? 'toy-decode');
      expect([res.status, res.body.error?.code], JSON.stringify(body)).toEqual([status, code]);
      expect(res.body.error.message).toContain(words);
    }
    const byParticipant = await post(ok, 'toy-decode', owner);
    expect(byParticipant.status).toBe(403);
    expect(byParticipant.body.error.code).toBe('organizers_only');
    const refundByParticipant = await owner.post(
      '/api/admin/runs/00000000-0000-4000-8000-000000000000/refund',
      { reason: 'mine' },
    );
    expect(refundByParticipant.status).toBe(403);
    const unknownRun = await organizer.post('/api/admin/runs/00000000-0000-4000-8000-000000000000/refund', {
      reason: 'gone',
    });
    expect(unknownRun.status).toBe(404);
    expect(await quota(owner, 'toy-decode', 'public')).toMatchObject({ limit: 3, granted: 0 });
  });
});
