import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROOT, startTestHub, TestHub } from '../support/hub';
import { TestAgent } from '../support/test-agent';
import { ownerWithTeam, TestUser } from '../support/users';

/**
 * Refunds against the product page's daily limits (Easy 60 · Medium 6 · Hard 1, UTC day), through
 * the real API: a run canceled before it started, and a run failed infra_error or harness_error,
 * do not count; the quota API and the run say so.
 */
describe('refunded runs do not count against daily limits', () => {
  let hub: TestHub;
  let agent: TestAgent;
  const sample = readFileSync(path.join(ROOT, 'starters/deep-recurrence/submission.py'));

  beforeAll(async () => {
    // Easy's 60 runs a day are queued at once below: above the hub's default cap of queued runs per team.
    hub = await startTestHub({ env: { TEAM_QUEUED_RUNS: '100' } });
    agent = new TestAgent(hub);
  });
  afterAll(async () => hub?.close());

  async function participant(login: string): Promise<{ user: TestUser; sub: string }> {
    const { owner } = await ownerWithTeam(hub, login);
    const res = await owner.upload(
      '/api/submissions',
      { benchmark: 'deep-recurrence' },
      { name: 'submission.py', content: sample },
    );
    expect(res.status).toBe(201);
    return { user: owner, sub: res.body.submission.id };
  }

  const body = (tier: string) =>
    tier === 'hard' ? { mode: 'official', confirm: true, tier } : { mode: 'public', tier, dataset: 'affine' };

  async function quota(user: TestUser, bucket: string) {
    const res = await user.get('/api/quota?benchmark=deep-recurrence');
    expect(res.status).toBe(200);
    return res.body.find((q: { bucket: string }) => q.bucket === bucket);
  }

  const cancel = (user: TestUser, runId: string) =>
    user.post(`/api/runs/${runId}/cancel`, { reason: 'stuck in the queue' });

  it('Hard (1 a day): canceled while queued or assigned, infra_error and harness_error are refunded; a cancel after start and a candidate_error count', async () => {
    const { user, sub } = await participant('refund-hard');
    const start = () => user.post(`/api/submissions/${sub}/runs`, body('hard'));

    const queued = await start();
    expect(queued.status).toBe(201);
    expect(queued.body.quota).toMatchObject({ bucket: 'hard', limit: 1, used: 1, remaining: 0, refunded: 0 });
    expect((await start()).status).toBe(429);

    // 1. Canceled while queued.
    const c1 = await cancel(user, queued.body.run.id);
    expect(c1.status).toBe(200);
    expect(c1.body.run).toMatchObject({ status: 'canceled', quotaRefunded: true });
    expect(await quota(user, 'hard')).toMatchObject({ used: 0, remaining: 1, refunded: 1 });

    // 2. Canceled while assigned (an agent took it, it had not started).
    const assigned = await start();
    expect(assigned.status).toBe(201);
    await agent.claim(assigned.body.run.id);
    expect((await cancel(user, assigned.body.run.id)).body.run.quotaRefunded).toBe(true);
    expect(await quota(user, 'hard')).toMatchObject({ used: 0, remaining: 1, refunded: 2 });

    // 3. and 4. The hub's failures: infra_error and harness_error.
    for (const failureCode of ['infra_error', 'harness_error'] as const) {
      const run = await start();
      expect(run.status).toBe(201);
      await agent.claim(run.body.run.id);
      await agent.log(run.body.run.id, 'training');
      await agent.finish(run.body.run.id, { status: 'failed', failureCode, message: 'evaluator broke' });
      const view = await user.get(`/api/runs/${run.body.run.id}`);
      expect(view.body).toMatchObject({ status: 'failed', failureCode, quotaRefunded: true });
    }
    expect(await quota(user, 'hard')).toMatchObject({ used: 0, remaining: 1, refunded: 4 });

    // A cancel once the run is running counts: the GPU time was spent.
    const running = await start();
    expect(running.status).toBe(201);
    await agent.claim(running.body.run.id);
    await agent.log(running.body.run.id, 'step 1 loss 6.9');
    expect((await user.get(`/api/runs/${running.body.run.id}`)).body.status).toBe('running');
    const c5 = await cancel(user, running.body.run.id);
    expect(c5.body.run).toMatchObject({ status: 'canceled', quotaRefunded: false });
    expect(await quota(user, 'hard')).toMatchObject({ used: 1, remaining: 0, refunded: 4 });
    const spent = await start();
    expect(spent.status).toBe(429);
    expect(spent.body.error.code).toBe('daily_limit_reached');
  });

  it('Medium (6 a day): a canceled queued run gives its place back; a candidate_error does not', async () => {
    const { user, sub } = await participant('refund-medium');
    const start = () => user.post(`/api/submissions/${sub}/runs`, body('medium'));
    const runs: string[] = [];
    for (let i = 0; i < 6; i++) {
      const res = await start();
      expect(res.status).toBe(201);
      runs.push(res.body.run.id);
    }
    expect((await start()).status).toBe(429);
    await agent.claim(runs[0]);
    await agent.finish(runs[0], { status: 'failed', failureCode: 'candidate_error', message: 'boom' });
    expect((await user.get(`/api/runs/${runs[0]}`)).body.quotaRefunded).toBe(false);
    expect((await start()).status).toBe(429);
    await cancel(user, runs[5]);
    expect(await quota(user, 'medium')).toMatchObject({ limit: 6, used: 5, remaining: 1, refunded: 1 });
    const again = await start();
    expect(again.status).toBe(201);
    expect(again.body.quota).toMatchObject({ used: 6, remaining: 0, refunded: 1 });
  });

  it('Easy (60 a day): the 61st run is refused until a queued one is canceled', async () => {
    const { user, sub } = await participant('refund-easy');
    const start = () => user.post(`/api/submissions/${sub}/runs`, body('easy'));
    let last = '';
    for (let i = 0; i < 60; i++) {
      const res = await start();
      expect(res.status).toBe(201);
      last = res.body.run.id;
    }
    expect(await quota(user, 'easy')).toMatchObject({ limit: 60, used: 60, remaining: 0, refunded: 0 });
    expect((await start()).status).toBe(429);
    await cancel(user, last);
    expect(await quota(user, 'easy')).toMatchObject({ used: 59, remaining: 1, refunded: 1 });
    expect((await start()).status).toBe(201);
    expect((await start()).status).toBe(429);
  }, 60_000);
});
