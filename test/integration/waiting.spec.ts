import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunView } from '@dryft/libs';
import { HttpUser, toyStarter, until } from '../support/agent-helpers';
import { ROOT, startTestHub, TestHub } from '../support/hub';
import { FakeAgent } from '../support/fake-agent';
import { Clock } from '../../apps/api/src/common/clock';

/** A clock the test moves forward (the hint to cancel comes after a definition-set time). */
class TestClock extends Clock {
  offsetMs = 0;
  now(): Date {
    return new Date(Date.now() + this.offsetMs);
  }
}

describe('why a queued run waits: GET /api/runs/:id waiting, and the organizer queue', () => {
  let hub: TestHub;
  let org: HttpUser;
  let alice: HttpUser;
  const clock = new TestClock();
  const agents: FakeAgent[] = [];
  const sample = readFileSync(path.join(ROOT, 'starters/deep-recurrence/submission.py'));

  beforeAll(async () => {
    hub = await startTestHub({
      env: { ADMIN_LOGINS: 'wait-org', AGENT_LEASE_SECONDS: '3600' },
      clock,
    });
    org = await HttpUser.signIn(hub.baseUrl, 'wait-org');
    alice = await HttpUser.signIn(hub.baseUrl, 'wait-alice');
    await alice.createTeam();
  });
  afterAll(async () => {
    for (const a of agents) a.close();
    await hub?.close();
  });

  const agent = async (name: string, capabilities = {}, slots = 1) => {
    const { token } = await org.createAgent(name);
    const a = new FakeAgent(hub.baseUrl, token);
    agents.push(a);
    expect((await a.ready({ slots, capabilities })).ok).toBe(true);
    return a;
  };

  async function deepRecurrenceRun(): Promise<RunView> {
    const sub = await alice.upload(sample, 'deep-recurrence', 'submission.py');
    const res = await alice.post(`/api/submissions/${sub}/runs`, {
      mode: 'public',
      tier: 'easy',
      dataset: 'affine',
    });
    expect(res.status).toBe(201);
    return res.body.run;
  }

  it('with no agent at all, and with only a CPU agent online: no capable agent, in words, no ETA', async () => {
    const run = await deepRecurrenceRun();
    expect(run.waiting).toMatchObject({ capableAgents: 0, position: 1, etaSeconds: null, etaIsGuess: true });
    const none = (await alice.run(run.id)).waiting!;
    expect(none.reason).toBe(
      'No online agent can run deep-recurrence: it needs an NVIDIA H100 or H200; no agent is online.',
    );
    expect(none.suggestCancel).toBe(false);

    await agent('cpu-box');
    const view = await alice.run(run.id);
    expect(view.status).toBe('queued');
    expect(view.waiting).toMatchObject({
      reason:
        'No online agent can run deep-recurrence: it needs an NVIDIA H100 or H200; the agents online have: cpu.',
      capableAgents: 0,
      capableSlots: 0,
      busySlots: 0,
      position: 1,
      etaSeconds: null,
      etaIsGuess: true,
      lastCapableSeenAt: null,
      suggestCancel: false,
    });

    // A GPU box of the right model that cannot run training says what is missing.
    await agent('h100-no-torch', {
      accelerator: 'gpu',
      gpuModel: 'NVIDIA H100 80GB HBM3',
      gpuCount: 1,
      cannotRun: {
        training: 'python3 cannot import torch: apt-get install python3-torch, or set HARNESS_PYTHON.',
      },
    });
    const missing = (await alice.run(run.id)).waiting!;
    expect(missing.reason).toContain('the agents online have: cpu, NVIDIA H100 80GB HBM3');
    expect(missing.reason).toContain(
      'Agent h100-no-torch has the hardware but cannot run it: python3 cannot import torch: apt-get install python3-torch',
    );
    expect((await alice.run(run.id)).status).toBe('queued');

    // After the definition's noCapableAgentHintSeconds (300 s) with no capable agent: suggest cancelling.
    clock.offsetMs = 301_000;
    expect((await alice.run(run.id)).waiting!.suggestCancel).toBe(true);
    clock.offsetMs = 0;

    const queue = await org.get('/api/admin/queue');
    expect(queue.status).toBe(200);
    expect(
      queue.body.find((q: { benchmarkId: string }) => q.benchmarkId === 'deep-recurrence'),
    ).toMatchObject({
      queued: 1,
      capableAgents: 0,
      capableSlots: 0,
    });
    expect((await alice.get('/api/admin/queue')).status).toBe(403);
  });

  it('with every capable slot busy: says so, with a position and an estimate marked as a guess', async () => {
    const box = await agent('toy-box');
    const cpuBox = agents[0];
    const sub = await alice.upload(await toyStarter());
    const runs = [await alice.startRun(sub), await alice.startRun(sub)];
    // Assigned in the database first, then delivered: wait for both, or the second delivery can
    // still be on its way when the agents' lists are read.
    await until('both CPU agents hold a run', async () => {
      const views = await Promise.all(runs.map((r) => alice.run(r.id)));
      const delivered = box.assigned.length + cpuBox.assigned.length >= 2;
      return delivered && views.every((v) => v.status === 'assigned') ? views : null;
    });
    expect([...box.assigned, ...cpuBox.assigned].map((a) => a.runId).sort()).toEqual(
      runs.map((r) => r.id).sort(),
    );
    const third = await alice.startRun(sub);
    const fourth = await alice.startRun(sub);
    const view = await alice.run(third.id);
    expect(view.status).toBe('queued');
    expect(view.waiting).toMatchObject({
      reason: 'All 2 slots that can run toy-decode are busy (cpu-box, toy-box). It is next in line.',
      capableAgents: 2,
      capableSlots: 2,
      busySlots: 2,
      position: 1,
      etaIsGuess: true,
      suggestCancel: false,
    });
    const eta3 = view.waiting!.etaSeconds!;
    expect(eta3).toBeGreaterThan(0);
    const w4 = (await alice.run(fourth.id)).waiting!;
    expect(w4.position).toBe(2);
    expect(w4.reason).toMatch(/busy \(cpu-box, toy-box\)\. #2 in line\.$/);
    expect(w4.etaSeconds!).toBeGreaterThanOrEqual(eta3);

    // Three recent runs of 60 s each: the estimate rests on them and stops being a guess.
    const sub2 = await alice.upload(await toyStarter());
    for (let i = 0; i < 3; i++) {
      const done = await alice.startRun(sub2);
      await hub.dataSource.query(
        `UPDATE runs SET status = 'succeeded', score = 100, assigned_at = now() - interval '100 seconds',
                started_at = now() - interval '99 seconds', finished_at = now() - interval '40 seconds'
          WHERE id = $1 AND status = 'queued'`,
        [done.id],
      );
    }
    const measured = (await alice.run(fourth.id)).waiting!;
    expect(measured.etaIsGuess).toBe(false);
    // Both slots free about 60 s after their runs were assigned; #2 in line takes the second one.
    expect(measured.etaSeconds!).toBeGreaterThan(30);
    expect(measured.etaSeconds!).toBeLessThanOrEqual(60);

    const queue = await org.get('/api/admin/queue');
    expect(queue.body.find((q: { benchmarkId: string }) => q.benchmarkId === 'toy-decode')).toMatchObject({
      queued: 2,
      capableAgents: 2,
      capableSlots: 2,
      busySlots: 2,
    });
  });
});
