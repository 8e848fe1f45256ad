import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunView } from '@dryft/libs';
import { EventBus } from '../../apps/api/src/common/event-bus';
import { RunPoliciesService } from '../../apps/api/src/runs/run-policies.service';
import { toyStarter } from '../support/archives';
import { startTestHub, TestHub } from '../support/hub';
import { TestAgent } from '../support/test-agent';
import { ownerWithTeam, TestUser } from '../support/users';

async function until<T>(what: string, check: () => Promise<T | undefined | false>, ms = 10_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await check();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe('the whole-run time limit, enforced by the server', () => {
  let hub: TestHub;
  let owner: TestUser;
  beforeAll(async () => {
    hub = await startTestHub({ env: { AGENT_LEASE_SECONDS: '2', DEADLINE_GRACE_SECONDS: '0' } });
    ({ owner } = await ownerWithTeam(hub, 'deadline-owner'));
  });
  afterAll(async () => hub?.close());

  it('cancels a run past its deadline with an explanation even when its agent says nothing', async () => {
    const sub = (
      await owner.upload(
        '/api/submissions',
        { benchmark: 'toy-decode' },
        { name: 'slow.tar.gz', content: await toyStarter() },
      )
    ).body.submission.id;
    const run = (await owner.post(`/api/submissions/${sub}/runs`, { mode: 'public' })).body.run;
    const silent = new TestAgent(hub, 'silent-agent');
    await silent.claim(run.id);
    await silent.log(run.id, 'started, then nothing more');
    // The agent keeps its lease (claimed for 60 s) but never finishes: only the deadline can end it.
    await hub.dataSource.query(`UPDATE runs SET deadline_at = now() - interval '1 second' WHERE id = $1`, [
      run.id,
    ]);
    const ended = await until('the run to be stopped', async () => {
      const r = (await owner.get(`/api/runs/${run.id}`)).body;
      return r.status === 'canceled' ? r : undefined;
    });
    expect(ended.message).toMatch(/whole-run time limit of 300 s/);
    expect(ended.cancelReason).toMatch(/time limit/);
    // The silent agent's late report changes nothing.
    expect((await silent.log(run.id, 'too late')).stop).toBe(true);
    await silent.finish(run.id, { status: 'succeeded', score: 500 });
    expect((await owner.get(`/api/runs/${run.id}`)).body.status).toBe('canceled');
  });

  it('an agent that stops a run at a lowered limit gets the limit in force named in the failure', async () => {
    const sub = (
      await owner.upload(
        '/api/submissions',
        { benchmark: 'toy-decode' },
        { name: 'lowered.tar.gz', content: await toyStarter() },
      )
    ).body.submission.id;
    const run = (await owner.post(`/api/submissions/${sub}/runs`, { mode: 'public' })).body.run;
    const agent = new TestAgent(hub, 'deadline-agent');
    await agent.claim(run.id);
    await hub.dataSource.query(
      `UPDATE runs SET run_time_limit_seconds = 120, deadline_at = now() + interval '1 second' WHERE id = $1`,
      [run.id],
    );
    await new Promise((r) => setTimeout(r, 1100));
    // what the agent reports when its deadline timer fires (apps/gpu-agent/src/verdict.ts)
    await agent.finish(run.id, {
      status: 'failed',
      failureCode: 'timeout',
      message: "The run exceeded the organizer's whole-run time limit and was stopped.",
    });
    const r = (await owner.get(`/api/runs/${run.id}`)).body;
    expect(r).toMatchObject({ status: 'failed', failureCode: 'timeout' });
    expect(r.message).toBe(
      "The run exceeded the organizer's whole-run time limit and was stopped. The whole-run time limit in force was 120 s.",
    );
    // A harness timeout well before the deadline keeps its own message.
    const early = (await owner.post(`/api/submissions/${sub}/runs`, { mode: 'public' })).body.run;
    await agent.claim(early.id);
    await agent.finish(early.id, {
      status: 'failed',
      failureCode: 'timeout',
      message: 'generate took too long',
    });
    expect((await owner.get(`/api/runs/${early.id}`)).body.message).toBe('generate took too long');
  });
  it('every stored change raises the run revision, so a read from before a new limit loses to its live status', async () => {
    // The CI failure this answers: the run page read its run (REST) between two changes and the
    // answer arrived after the live status of the second; the page showed a deadline that never was.
    const sub = (
      await owner.upload(
        '/api/submissions',
        { benchmark: 'toy-decode' },
        { name: 'revision.tar.gz', content: await toyStarter() },
      )
    ).body.submission.id;
    const created: RunView = (await owner.post(`/api/submissions/${sub}/runs`, { mode: 'public' })).body.run;
    const read = async (): Promise<RunView> => (await owner.get(`/api/runs/${created.id}`)).body;
    const agent = new TestAgent(hub, 'revision-agent');
    await agent.claim(created.id);
    const assigned = await read();
    await agent.log(created.id, 'first line');
    const running = await read();
    expect(running.status).toBe('running');
    expect(running.revision).toBeGreaterThan(assigned.revision);
    expect(assigned.revision).toBeGreaterThan(created.revision);
    // A raw statement counts as well as the hub's own: the trigger is in the database.
    await hub.dataSource.query(`UPDATE runs SET assigned_at = now() - interval '180 seconds' WHERE id = $1`, [
      created.id,
    ]);
    const stale = await read();
    expect(stale.revision).toBeGreaterThan(running.revision);
    const announced: RunView[] = [];
    const off = hub.app.get(EventBus).on('run.status', ({ run }) => {
      if (run.id === created.id) announced.push(run);
    });
    try {
      await hub.app.get(RunPoliciesService).applyRunTimeLimit('toy-decode', 120);
    } finally {
      off();
    }
    expect(announced).toHaveLength(1);
    const [now] = announced;
    expect(Date.parse(now.deadlineAt!) - Date.parse(now.assignedAt!)).toBe(120_000);
    expect(Date.parse(stale.deadlineAt!) - Date.parse(stale.assignedAt!)).toBeGreaterThan(400_000);
    // What a client keeps (apps/web RunState): the higher revision, whichever arrived last.
    expect(now.revision).toBeGreaterThan(stale.revision);
    expect((await read()).revision).toBe(now.revision);
    await hub.app.get(RunPoliciesService).applyRunTimeLimit('toy-decode', 300);
  });
});
