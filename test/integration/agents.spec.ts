import { createHash } from 'node:crypto';
import { io } from 'socket.io-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HttpUser, toyStarter, until } from '../support/agent-helpers';
import { FakeAgent } from '../support/fake-agent';
import { startTestHub, TestHub } from '../support/hub';

const SUCCEEDED = {
  status: 'succeeded',
  failureCode: null,
  message: 'ok',
  score: 120,
  workloads: [],
  metrics: {},
} as const;

describe('agents: organizer routes, pushed dispatch, downloads and the protocol', () => {
  let hub: TestHub;
  let org: HttpUser;
  let alice: HttpUser;
  let bob: HttpUser;
  const agents: FakeAgent[] = [];

  beforeAll(async () => {
    hub = await startTestHub({ env: { ADMIN_LOGINS: 'agents-org', AGENT_LEASE_SECONDS: '30' } });
    org = await HttpUser.signIn(hub.baseUrl, 'agents-org');
    alice = await HttpUser.signIn(hub.baseUrl, 'agents-alice');
    await alice.createTeam();
    bob = await HttpUser.signIn(hub.baseUrl, 'agents-bob');
    await bob.createTeam();
  });
  afterAll(async () => {
    for (const a of agents) a.socket.close();
    await hub?.close();
  });

  const scripted = async (name: string, slots = 1) => {
    const { token } = await org.createAgent(name);
    const a = new FakeAgent(hub.baseUrl, token);
    agents.push(a);
    const ack = await a.ready({ slots });
    expect(ack.ok).toBe(true);
    return a;
  };

  it('lets only organizers manage agents; the token is shown once', async () => {
    expect((await alice.post('/api/admin/agents', { name: 'nope' })).status).toBe(403);
    const created = await org.post('/api/admin/agents', { name: 'gpu-box-7' });
    expect(created.status).toBe(201);
    expect(created.body.token).toMatch(/^dryft_agent_/);
    const list = await org.get('/api/admin/agents');
    const listed = list.body.find((a: { id: string }) => a.id === created.body.id);
    expect(listed).toMatchObject({ name: 'gpu-box-7', status: 'offline', slots: 0 });
    expect(JSON.stringify(list.body)).not.toContain(created.body.token);
    expect(
      (await org.post(`/api/admin/agents/${created.body.id}/drain`, { draining: true })).body.draining ??
        true,
    ).toBeTruthy();
    expect((await org.delete(`/api/admin/agents/${created.body.id}`)).body.status).toBe('revoked');
    const refused = io(`${hub.baseUrl}/agents`, {
      auth: { token: created.body.token },
      transports: ['websocket'],
      forceNew: true,
      reconnection: false,
    });
    const err = await new Promise<Error & { data?: { code: string } }>((r) =>
      refused.once('connect_error', r),
    );
    expect(err.data?.code).toBe('agent_revoked');
    refused.close();
    const bad = io(`${hub.baseUrl}/agents`, {
      auth: { token: 'dryft_agent_123' },
      transports: ['websocket'],
      forceNew: true,
      reconnection: false,
    });
    expect(
      (await new Promise<Error & { data?: { code: string } }>((r) => bad.once('connect_error', r))).data
        ?.code,
    ).toBe('token_malformed');
    bad.close();
  });

  it('pushes a queued run to an idle agent, serves the download once, and keeps the protocol strict', async () => {
    const a = await scripted('push-box');
    const sub = await alice.upload(await toyStarter());
    const t0 = Date.now();
    const run = await alice.startRun(sub);
    const assign = await until('assignment', () => a.assigned.find((x) => x.runId === run.id), 5_000);
    expect(Date.now() - t0).toBeLessThan(2_000);
    expect(assign.spec.kind).toBe('decode');
    expect(assign.submission.kind).toBe('archive');
    expect(assign.deadlineAt).toBeGreaterThan(Date.now());
    const view = await alice.run(run.id);
    expect(view.status).toBe('assigned');
    expect(view.agentName).toBe('push-box');
    // the agent keys the candidate's compile cache by the run's team (apps/gpu-agent/src/compile-cache.ts)
    expect(assign.teamId).toBe(view.teamId);
    expect(assign.teamId).toBeTruthy();

    const url = `${hub.baseUrl}${assign.submission.url}`;
    expect((await fetch(url)).status).toBe(401); // no agent token
    const res = await fetch(url, { headers: { 'x-agent-token': a.token } });
    expect(res.status).toBe(200);
    const bytes = Buffer.from(await res.arrayBuffer());
    expect(createHash('sha256').update(bytes).digest('hex')).toBe(assign.submission.sha256);
    expect((await fetch(url, { headers: { 'x-agent-token': a.token } })).status).toBe(410);

    // Malformed and unknown events are refused with an error; the connection stays usable.
    expect(await a.socket.emitWithAck('run.batch', { runId: run.id, seq: 'one' })).toMatchObject({
      ok: false,
      final: true,
      error: { code: 'invalid_payload' },
    });
    expect(await a.socket.emitWithAck('run.explode', {})).toMatchObject({
      ok: false,
      error: { code: 'unknown_event', message: 'Unknown event "run.explode".' },
    });
    expect((await a.socket.emitWithAck('run.started', { runId: run.id })).ok).toBe(true);
    // A batch beyond the next is refused with what is stored; a resend is acked without storing.
    const line = (n: number) => ({ type: 'log', n, ts: Date.now(), stream: 'out', text: `line ${n}` });
    expect(
      await a.socket.emitWithAck('run.batch', { runId: run.id, seq: 2, entries: [line(2)] }),
    ).toMatchObject({ ok: false, ackedSeq: 0, error: { code: 'batch_out_of_order' } });
    expect(
      await a.socket.emitWithAck('run.batch', { runId: run.id, seq: 1, entries: [line(1)] }),
    ).toMatchObject({ ok: true, ackedSeq: 1 });
    expect(
      await a.socket.emitWithAck('run.batch', { runId: run.id, seq: 1, entries: [line(1)] }),
    ).toMatchObject({ ok: true, ackedSeq: 1 });
    const hb = await a.socket.emitWithAck('agent.heartbeat', {
      activeRuns: [run.id, '00000000-0000-0000-0000-000000000000'],
    });
    expect(hb.stop).toEqual(['00000000-0000-0000-0000-000000000000']);
    expect((await a.finish(run.id, SUCCEEDED, 1)).ok).toBe(true);
    expect((await a.finish(run.id, SUCCEEDED, 1)).ok).toBe(true); // idempotent
    const done = await alice.run(run.id);
    expect(done.status).toBe('succeeded');
    expect(done.lastLogSeq).toBe(1);
    a.socket.close();
  });

  it('stores every line once, in seq order, with its text intact, a batch at a time', async () => {
    const a = await scripted('copy-box');
    const sub = await alice.upload(await toyStarter());
    const run = await alice.startRun(sub);
    await until('assignment', () => a.assigned.find((x) => x.runId === run.id), 5_000);
    expect((await a.socket.emitWithAck('run.started', { runId: run.id })).ok).toBe(true);
    const ts = Date.now() + 0.4;
    const line = (n: number, text: string, stream = 'out') => ({ type: 'log', n, ts, stream, text });
    const tricky = [
      'tab\there, backslash \\ and \\N, a quote " and a comma ,',
      'new\nline and carriage\rreturn',
      'nul \u0000 inside',
      'ünïcödé, 中文, emoji 🚀, a lone surrogate \ud800',
      '',
      'x'.repeat(16_384),
    ];
    const filler = (from: number, to: number) =>
      Array.from({ length: to - from + 1 }, (_, i) => line(from + i, `filler ${from + i}`));
    const batch = (seq: number, entries: unknown[]) =>
      a.socket.emitWithAck('run.batch', { runId: run.id, seq, entries });
    // A big batch (the locked path: the run's first); the same batch again is a resend.
    const first = [...tricky.map((t, i) => line(i + 1, t, i % 2 ? 'harness' : 'out')), ...filler(7, 600)];
    expect(await batch(1, first)).toMatchObject({ ok: true, ackedSeq: 1 });
    expect(await batch(1, first)).toMatchObject({ ok: true, ackedSeq: 1 });
    // Overlapping the stored lines (600 again, with other text) and out of order: the line stored
    // first is kept, and the new ones are stored in seq order.
    const second = [line(600, 'not stored'), line(602, 'six hundred two'), line(601, 'six hundred one')];
    expect(await batch(2, second)).toMatchObject({ ok: true, ackedSeq: 2 });
    // Big and new again, after a gap (one statement); then a one-line batch.
    expect(await batch(3, filler(700, 1_299))).toMatchObject({ ok: true, ackedSeq: 3 });
    expect(await batch(4, [line(1_300, 'last')])).toMatchObject({ ok: true, ackedSeq: 4 });
    expect((await a.finish(run.id, SUCCEEDED, 4)).ok).toBe(true);
    const logs = await alice.allLogs(run.id);
    const seqs = [
      ...Array.from({ length: 602 }, (_, i) => i + 1),
      ...Array.from({ length: 601 }, (_, i) => 700 + i),
    ];
    expect(logs.map((l) => l.seq)).toEqual(seqs);
    expect(logs.slice(0, 6).map((l) => l.text)).toEqual(
      tricky.map((t) => t.replace('\u0000', '').replace('\ud800', '\ufffd')),
    );
    expect(logs.slice(0, 6).map((l) => l.stream)).toEqual([
      'out',
      'harness',
      'out',
      'harness',
      'out',
      'harness',
    ]);
    expect(logs.find((l) => l.seq === 600)?.text).toBe('filler 600');
    expect(logs.slice(600, 602).map((l) => l.text)).toEqual(['six hundred one', 'six hundred two']);
    expect(logs.find((l) => l.seq === 1_299)?.text).toBe('filler 1299');
    expect(logs[logs.length - 1].text).toBe('last');
    expect(logs.every((l) => l.ts === Math.round(ts))).toBe(true);
    expect((await alice.run(run.id)).lastLogSeq).toBe(1_300);
    a.socket.close();
  });

  it('is fair between teams, never shares an official run, and requeues a refused assignment', async () => {
    const subA = await alice.upload(await toyStarter());
    const subB = await bob.upload(await toyStarter());
    const a1 = await alice.startRun(subA);
    const a2 = await alice.startRun(subA);
    const b1 = await bob.startRun(subB);
    const box = await scripted('fair-box', 2);
    await until('two assignments', () => box.assigned.length >= 2, 5_000);
    // Oldest first, but a team already running goes after one that is not: a1 and b1, not a1 and a2.
    expect(box.assigned.map((x) => x.runId).sort()).toEqual([a1.id, b1.id].sort());
    for (const x of box.assigned) await box.finish(x.runId, SUCCEEDED, 0);
    await until('a2 assigned', () => box.assigned.find((x) => x.runId === a2.id), 5_000);
    await box.finish(a2.id, SUCCEEDED, 0);

    // An official run takes the CPU box alone; a public run waits until it is done.
    const off = await alice.startRun(subA, 'official');
    await until('official assigned', () => box.assigned.find((x) => x.runId === off.id), 5_000);
    const pub = await bob.startRun(subB);
    await new Promise((r) => setTimeout(r, 500));
    expect(box.assigned.find((x) => x.runId === pub.id)).toBeUndefined();
    expect((await bob.run(pub.id)).status).toBe('queued');
    await box.finish(off.id, SUCCEEDED, 0);
    await until(
      'public assigned after the official run',
      () => box.assigned.find((x) => x.runId === pub.id),
      5_000,
    );

    // Refused: back to the queue (never started, nothing to fail).
    box.accept = false;
    await box.finish(pub.id, SUCCEEDED, 0);
    const refusedRun = await alice.startRun(subA);
    await until('refused', () => box.assigned.find((x) => x.runId === refusedRun.id), 5_000);
    await until('requeued', async () => (await alice.run(refusedRun.id)).status === 'queued', 5_000);
  });
});

describe('fair queueing on a one-slot agent', () => {
  let hub: TestHub;
  afterAll(async () => hub?.close());

  it("alternates teams: one team's burst does not starve another team's single run", async () => {
    hub = await startTestHub({ env: { ADMIN_LOGINS: 'fair-org', AGENT_LEASE_SECONDS: '30' } });
    const org = await HttpUser.signIn(hub.baseUrl, 'fair-org');
    const burst = await HttpUser.signIn(hub.baseUrl, 'fair-burst');
    await burst.createTeam();
    const single = await HttpUser.signIn(hub.baseUrl, 'fair-single');
    await single.createTeam();
    const sb = await burst.upload(await toyStarter());
    const ss = await single.upload(await toyStarter());
    const b = [];
    for (let i = 0; i < 4; i++) b.push(await burst.startRun(sb));
    const s1 = await single.startRun(ss); // queued after the whole burst
    const { token } = await org.createAgent('one-slot');
    const box = new FakeAgent(hub.baseUrl, token);
    try {
      expect((await box.ready({ slots: 1 })).ok).toBe(true);
      const order: string[] = [];
      for (let i = 0; i < 3; i++) {
        await until(`assignment ${i + 1}`, () => box.assigned.length > i || null, 5_000);
        const runId = box.assigned[i].runId;
        order.push(runId);
        await box.finish(runId, SUCCEEDED, 0);
      }
      // The oldest run first, then the team not yet served, then the burst again.
      expect(order).toEqual([b[0].id, s1.id, b[1].id]);
    } finally {
      box.socket.close();
    }
  });
});
