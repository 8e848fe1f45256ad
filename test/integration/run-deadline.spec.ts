import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { wholeRunLimitCancelReason, wholeRunLimitMessage } from '@dryft/libs';
import type { RunView } from '@dryft/libs';
import { EventBus } from '../../apps/api/src/common/event-bus';
import { RunPoliciesService } from '../../apps/api/src/runs/run-policies.service';
import { HttpUser, until as untilFound } from '../support/agent-helpers';
import { toyStarter } from '../support/archives';
import { FakeAgent } from '../support/fake-agent';
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

  it('an older agent that reports a timeout at a lowered limit: canceled, naming the limit in force', async () => {
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
    await agent.log(run.id, 'started');
    await hub.dataSource.query(
      `UPDATE runs SET run_time_limit_seconds = 120, deadline_at = now() + interval '1 second' WHERE id = $1`,
      [run.id],
    );
    await new Promise((r) => setTimeout(r, 1100));
    // what an agent from before run_time_limit reported when its deadline timer fired
    await agent.finish(run.id, {
      status: 'failed',
      failureCode: 'timeout',
      message: "The run exceeded the organizer's whole-run time limit and was stopped.",
    });
    const r = (await owner.get(`/api/runs/${run.id}`)).body;
    expect(r).toMatchObject({
      status: 'canceled',
      failureCode: null,
      message: wholeRunLimitMessage(120),
      cancelReason: wholeRunLimitCancelReason(120),
      quotaRefunded: false,
    });
    // A harness timeout well before the deadline keeps its own message.
    const early = (await owner.post(`/api/submissions/${sub}/runs`, { mode: 'public' })).body.run;
    await agent.claim(early.id);
    await agent.finish(early.id, {
      status: 'failed',
      failureCode: 'timeout',
      message: 'generate took too long',
    });
    expect((await owner.get(`/api/runs/${early.id}`)).body).toMatchObject({
      status: 'failed',
      failureCode: 'timeout',
      message: 'generate took too long',
      cancelReason: null,
    });
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
      // 240 s from a start 180 s ago: the new deadline is still ahead, so the deadline sweep (grace
      // 0 here) cannot end the run between this change and the read below. It did once with 120 s
      // (a deadline already past) when the box was busy: that read saw the sweep's later revision.
      await hub.app.get(RunPoliciesService).applyRunTimeLimit('toy-decode', 240);
    } finally {
      off();
    }
    // The limit's change is announced once (the lease's, below, would be another status).
    const limited = announced.filter(
      (r) => Date.parse(r.deadlineAt!) - Date.parse(r.assignedAt!) === 240_000,
    );
    expect(limited, JSON.stringify(announced)).toHaveLength(1);
    const [now] = limited;
    expect(Date.parse(stale.deadlineAt!) - Date.parse(stale.assignedAt!)).toBeGreaterThan(400_000);
    // What a client keeps (apps/web RunState): the higher revision, whichever arrived last. A read
    // after the live status never goes back; it may be higher still when the 2 s lease of this
    // silent test agent lapses meanwhile on a busy box.
    expect(now.revision).toBeGreaterThan(stale.revision);
    expect((await read()).revision).toBeGreaterThanOrEqual(now.revision);
    await hub.app.get(RunPoliciesService).applyRunTimeLimit('toy-decode', 300);
  });
});

describe('the whole-run time limit, reached by the agent first (over socket.io)', () => {
  let hub: TestHub;
  let org: HttpUser;
  let alice: HttpUser;
  let agent: FakeAgent;
  beforeAll(async () => {
    // The sweep's grace is long: the run can only end through what the agent reports.
    hub = await startTestHub({
      env: { ADMIN_LOGINS: 'limit-org', AGENT_LEASE_SECONDS: '30', DEADLINE_GRACE_SECONDS: '60' },
    });
    org = await HttpUser.signIn(hub.baseUrl, 'limit-org');
    alice = await HttpUser.signIn(hub.baseUrl, 'limit-alice');
    await alice.createTeam();
    agent = new FakeAgent(hub.baseUrl, (await org.createAgent('limit-box')).token);
    expect((await agent.ready()).ok).toBe(true);
  });
  afterAll(async () => {
    agent?.close();
    await hub?.close();
  });

  it('a run its agent stops at the limit ends canceled with the limit in force named, everywhere it is read', async () => {
    const run = await alice.startRun(await alice.upload(await toyStarter()));
    const assign = await untilFound('assignment', () => agent.assigned.find((a) => a.runId === run.id));
    expect(assign.deadlineAt).toBeGreaterThan(Date.now());
    await agent.events(run.id, []);
    // The organizer lowers the limit while it runs: the limit in force is the one named.
    await hub.dataSource.query(
      `UPDATE runs SET run_time_limit_seconds = 45, deadline_at = now() - interval '100 milliseconds' WHERE id = $1`,
      [run.id],
    );
    const finished: RunView[] = [];
    const statuses: RunView[] = [];
    const bus = hub.app.get(EventBus);
    const offFinished = bus.on('run.finished', ({ runId, run: view }) => {
      if (runId === run.id) finished.push(view);
    });
    const offStatus = bus.on('run.status', ({ run: view }) => {
      if (view.id === run.id) statuses.push(view);
    });
    try {
      // What apps/gpu-agent reports when its deadline timer fires (verdict.ts).
      const ack = await agent.finish(
        run.id,
        {
          status: 'failed',
          failureCode: null,
          message: "Canceled: the run exceeded the organizer's whole-run time limit.",
          score: null,
          workloads: [],
          metrics: {},
        },
        undefined,
        { cancelReason: 'run_time_limit' },
      );
      expect(ack).toMatchObject({ ok: true });
    } finally {
      offFinished();
      offStatus();
    }
    const explained = {
      status: 'canceled',
      failureCode: null,
      score: null,
      message: "Canceled: the run exceeded the organizer's whole-run time limit of 45 s.",
      cancelReason: 'whole-run time limit (45 s) exceeded',
      // It had started: it counts against the daily limit, as every cancel after the start does.
      quotaRefunded: false,
    };
    expect(await alice.run(run.id)).toMatchObject(explained);
    // The webhooks (run.finished) and `/live` (run.status) send these views.
    expect(finished).toHaveLength(1);
    expect(finished[0]).toMatchObject(explained);
    expect(statuses.at(-1)).toMatchObject(explained);
    // A resend (a lost ack) changes nothing.
    expect(
      await agent.finish(run.id, {
        status: 'failed',
        failureCode: 'timeout',
        message: 'x',
        score: null,
        workloads: [],
        metrics: {},
      }),
    ).toMatchObject({ ok: true });
    expect(await alice.run(run.id)).toMatchObject(explained);
  });

  it('a cancel reason the hub does not know is accepted and read as a plain cancel', async () => {
    const run = await alice.startRun(await alice.upload(await toyStarter()));
    await untilFound('assignment', () => agent.assigned.find((a) => a.runId === run.id));
    await agent.events(run.id, []);
    const ack = await agent.finish(
      run.id,
      {
        status: 'failed',
        failureCode: null,
        message: 'Canceled: something new',
        score: null,
        workloads: [],
        metrics: {},
      },
      undefined,
      { cancelReason: 'a_reason_from_a_newer_agent' },
    );
    expect(ack).toMatchObject({ ok: true });
    expect(await alice.run(run.id)).toMatchObject({
      status: 'canceled',
      message: 'Canceled: something new',
      cancelReason: null,
    });
  });
});
