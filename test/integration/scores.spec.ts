import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type {
  AdminRunView,
  BaselinesView,
  HarnessEvent,
  HarnessResultEvent,
  LeaderboardView,
  RankView,
  RunAssign,
  RunResultView,
  RunView,
} from '@dryft/libs';
import { HttpUser, toyStarter, until } from '../support/agent-helpers';
import { startTestHub, TestHub } from '../support/hub';
import { FakeAgent } from '../support/fake-agent';

const ROOT = path.resolve(__dirname, '../..');
const FIG = { totalMs: 60, ttftMs: 5, tpotMs: 3.5 };

/** The key the real harness computes on this machine (what it compares a cached baseline with). */
function harnessHardwareKey(): string {
  return execFileSync(
    process.env.HARNESS_PYTHON ?? '/usr/bin/python3',
    [
      '-c',
      'from harness.decode.runner import hardware_key, hardware_name; print(hardware_key(hardware_name()))',
    ],
    { cwd: ROOT, env: { ...process.env, PYTHONPATH: path.join(ROOT, 'harness') }, encoding: 'utf8' },
  ).trim();
}

const baselineEvent = (hardware: string, paired: boolean, totalMs = FIG.totalMs): HarnessEvent => ({
  type: 'baseline',
  hardware,
  paired,
  samples: 5,
  workloads: { 'h-wide': { ...FIG, totalMs }, 'h-deep': { ...FIG, totalMs } },
});

describe('scores: the cached baseline, the hardware key, intervals and overlapping places', () => {
  let hub: TestHub;
  let org: HttpUser;
  let alice: HttpUser;
  let bob: HttpUser;
  let carol: HttpUser;
  let agent: FakeAgent;

  beforeAll(async () => {
    hub = await startTestHub({ env: { ADMIN_LOGINS: 'scores-org' } });
    org = await HttpUser.signIn(hub.baseUrl, 'scores-org');
    alice = await HttpUser.signIn(hub.baseUrl, 'scores-alice');
    await alice.createTeam();
    bob = await HttpUser.signIn(hub.baseUrl, 'scores-bob');
    await bob.createTeam();
    carol = await HttpUser.signIn(hub.baseUrl, 'scores-carol');
    await carol.createTeam();
    const { token } = await org.createAgent('scores-cpu');
    agent = new FakeAgent(hub.baseUrl, token);
    expect((await agent.ready()).ok).toBe(true);
  });
  afterAll(async () => {
    agent?.socket.close();
    await hub?.close();
  });

  const cached = async () =>
    (await hub.dataSource.query(
      `SELECT hardware, figures FROM baselines WHERE benchmark_id = 'toy-decode'`,
    )) as {
      hardware: string;
      figures: { hardware: string; workloads: Record<string, { totalMs: number }> };
    }[];

  const assignment = (runId: string): Promise<RunAssign> =>
    until('assignment', () => agent.assigned.find((a) => a.runId === runId), 10_000);

  const officialRun = async (user: HttpUser, score: number, low: number, high: number) => {
    const run = await user.startRun(await user.upload(await toyStarter()), 'official');
    const a = await assignment(run.id);
    await agent.events(run.id, [baselineEvent('cpu', true)]);
    const ack = await agent.finish(run.id, {
      status: 'succeeded',
      failureCode: null,
      message: 'Official score',
      score,
      workloads: [],
      metrics: {},
      interval: { low, high, halfWidth: (high - low) / 2, level: 0.95 },
      pairs: 7,
      indicative: false,
    });
    expect(ack.ok).toBe(true);
    return { run, assign: a };
  };

  it('never caches a public run’s baseline; an official paired run’s is cached under the key the next run compares', async () => {
    const key = harnessHardwareKey();
    expect(key).toBe('cpu'); // this machine has no GPU: one CPU key, never "cpu: <model>"

    // A public run with no cache: the spec asks for the official sample count for the baseline.
    const pub = await alice.startRun(await alice.upload(await toyStarter()), 'public');
    const pa = await assignment(pub.id);
    expect(pa.spec).toMatchObject({
      kind: 'decode',
      mode: 'public',
      baseline: null,
      samplesPerWorkload: 5,
      runSpreadPct: null,
    });
    // Whatever the harness reports from a public run, even claiming it was paired, is not cached.
    await agent.events(pub.id, [baselineEvent('cpu: AMD EPYC 7B13', false), baselineEvent('cpu', true, 1)]);
    await agent.finish(pub.id, {
      status: 'succeeded',
      failureCode: null,
      message: 'Public score',
      score: 97,
      workloads: [],
      metrics: {},
      indicative: true,
    });
    expect(await cached()).toEqual([]);
    const pubResult = (await alice.get<RunResultView>(`/api/runs/${pub.id}/result`)).body;
    expect(pubResult).toMatchObject({ score: 97, indicative: true, interval: null, pairs: null });

    // An official run: paired, with its adaptive-pair settings from the definition.
    const { run, assign } = await officialRun(alice, 101.5, 98.5, 104.5);
    expect(assign.spec).toMatchObject({
      mode: 'official',
      samplesPerWorkload: 5,
      maxPairs: 24,
      targetHalfWidthPct: 3,
      runSpreadPct: 1.25,
      referenceTokensPct: 100, // the toy's reference times whole samples (its clock is milliseconds long already)
    });
    const rows = await cached();
    expect(rows.map((r) => r.hardware)).toEqual([key]);
    expect(rows[0].figures.hardware).toBe(key);
    const result = (await alice.get<RunResultView>(`/api/runs/${run.id}/result`)).body;
    expect(result).toMatchObject({
      score: 101.5,
      interval: { low: 98.5, high: 104.5, halfWidth: 3, level: 0.95 },
      pairs: 7,
      indicative: false,
    });
    const rank = (await alice.get<RankView>(`/api/runs/${run.id}/rank`)).body;
    expect(rank).toMatchObject({ rank: 1, interval: { low: 98.5, high: 104.5 }, pairs: 7 });

    // The next public run gets the cached figures, under the very key its harness computes.
    const next = await alice.startRun(await alice.upload(await toyStarter()), 'public');
    const na = await assignment(next.id);
    expect(na.spec.kind === 'decode' && na.spec.baseline).toMatchObject({
      hardware: key,
      workloads: { 'h-wide': { totalMs: FIG.totalMs } },
    });
    await agent.finish(next.id, {
      status: 'succeeded',
      failureCode: null,
      message: 'Public score',
      score: 99,
      workloads: [],
      metrics: {},
      indicative: true,
    });
  });

  it('keeps best-score order and marks neighbours whose intervals overlap', async () => {
    await officialRun(bob, 103, 100.5, 105.5); // overlaps alice's 98.5–104.5
    await officialRun(carol, 150, 147, 153); // apart from both
    const board = (await alice.get<LeaderboardView>('/api/leaderboards/toy-decode')).body;
    expect(board.entries.map((e) => [e.score, e.overlapsPrevious, e.overlapsNext])).toEqual([
      [150, false, false],
      [103, false, true],
      [101.5, true, false],
    ]);
    expect(board.entries[1]).toMatchObject({
      interval: { low: 100.5, high: 105.5, halfWidth: 2.5 },
      pairs: 7,
    });
  });

  describe('an organizer’s baseline re-measure', () => {
    const REASON = 'driver update on the CPU box';
    const ALL = ['short', 'long', 'h-wide', 'h-deep'];
    const remeasure = (user: HttpUser, body: Record<string, unknown>, benchmark = 'toy-decode') =>
      user.post(`/api/admin/benchmarks/${benchmark}/baselines/remeasure`, body);
    const measured = (samples: number, totalMs: number, hardware = 'cpu: AMD EPYC 7B13') =>
      ({
        status: 'succeeded',
        failureCode: null,
        message: 'Baseline re-measured',
        score: null,
        workloads: [],
        metrics: {},
        baseline: {
          hardware,
          samples,
          workloads: Object.fromEntries(ALL.map((w) => [w, { ...FIG, totalMs }])),
        },
      }) satisfies Omit<HarnessResultEvent, 'type'>;

    it('is refused with a clear code: not an organizer, unknown benchmark, no baseline, too few samples, unknown hardware', async () => {
      const before = await cached();
      const notOrg = await remeasure(alice, { reason: REASON });
      expect([notOrg.status, notOrg.body.error.code]).toEqual([403, 'organizers_only']);
      const unknown = await remeasure(org, { reason: REASON }, 'nope');
      expect([unknown.status, unknown.body.error.code]).toEqual([404, 'benchmark_not_found']);
      const training = await remeasure(org, { reason: REASON }, 'recurrence-cpu');
      expect([training.status, training.body.error.code]).toEqual([400, 'no_baseline']);
      const few = await remeasure(org, { reason: REASON, samples: 9 });
      expect([few.status, few.body.error.code]).toEqual([400, 'invalid_request']);
      expect(few.body.error.message).toMatch(/at least 10/);
      const many = await remeasure(org, { reason: REASON, samples: 51 });
      expect([many.status, many.body.error.code]).toEqual([400, 'invalid_request']);
      const noReason = await remeasure(org, {});
      expect([noReason.status, noReason.body.error.code]).toEqual([400, 'invalid_request']);
      const gpu = await remeasure(org, { reason: REASON, hardware: 'NVIDIA H200' });
      expect([gpu.status, gpu.body.error.code]).toEqual([422, 'unknown_hardware']);
      expect(gpu.body.error.message).toMatch(/"cpu"/);
      expect(await cached()).toEqual(before);
      const audit = await hub.dataSource.query(
        `SELECT count(*)::int AS n FROM audit_log WHERE action = 'baseline.remeasure'`,
      );
      expect(audit[0].n).toBe(0);
    });

    it('queues a baseline-only run on the key’s agent; its verdict (≥ 10 samples) writes the cache, nothing else does', async () => {
      const boardBefore = (await alice.get<LeaderboardView>('/api/leaderboards/toy-decode')).body.entries;
      // The hardware may be left out: the only key of the agents that can run toy-decode is "cpu".
      const res = await remeasure(org, { reason: REASON, samples: 12 });
      expect(res.status).toBe(201);
      const run = res.body.run as RunView;
      expect(run).toMatchObject({ mode: 'baseline', submissionId: null, teamId: null, status: 'queued' });
      // One at a time per benchmark and key.
      const again = await remeasure(org, { reason: REASON, hardware: 'cpu: Intel Xeon' });
      expect([again.status, again.body.error.code]).toEqual([409, 'remeasure_pending']);
      expect(again.body.error.message).toContain(run.id);

      const a = await assignment(run.id);
      expect(a.mode).toBe('baseline');
      expect(a.submission).toBeNull();
      expect(a.spec).toMatchObject({
        kind: 'decode',
        mode: 'baseline',
        samplesPerWorkload: 12,
        baseline: null,
      });
      expect(a.spec.kind === 'decode' && a.spec.workloads.map((w) => w.name)).toEqual(ALL);
      // No team sees it; it is no team run and never a board entry.
      expect((await alice.get(`/api/runs/${run.id}`)).status).toBe(404);
      expect((await alice.get<{ items: RunView[] }>('/api/runs')).body.items.map((r) => r.id)).not.toContain(
        run.id,
      );
      const adminRuns = (await org.get<{ items: AdminRunView[] }>('/api/admin/runs?limit=200')).body.items;
      expect(adminRuns.map((r) => r.id)).not.toContain(run.id);
      expect((await org.get<RunView>(`/api/runs/${run.id}`)).body).toMatchObject({
        mode: 'baseline',
        teamId: null,
      });

      // An unpaired baseline event on the way changes nothing; the verdict does.
      await agent.events(run.id, [baselineEvent('cpu', false, 1)]);
      expect((await cached()).find((r) => r.hardware === 'cpu')!.figures.workloads['short']).toBeUndefined();
      expect((await agent.finish(run.id, measured(12, 42))).ok).toBe(true);
      const rows = await cached();
      expect(rows.map((r) => r.hardware)).toEqual(['cpu']);
      expect(rows[0].figures.hardware).toBe('cpu');
      expect(Object.keys(rows[0].figures.workloads).sort()).toEqual([...ALL].sort());
      expect(rows[0].figures.workloads['short'].totalMs).toBe(42);

      const view = (await org.get<BaselinesView>('/api/admin/benchmarks/toy-decode/baselines')).body;
      expect(view.cached.map((c) => c.hardware)).toEqual(['cpu']);
      expect(view.remeasures[0]).toMatchObject({
        runId: run.id,
        hardware: 'cpu',
        samples: 12,
        status: 'succeeded',
        requestedBy: 'scores-org',
        agentName: 'scores-cpu',
      });
      const result = (await org.get<RunResultView>(`/api/runs/${run.id}/result`)).body;
      expect(result).toMatchObject({ score: null, indicative: false, run: { status: 'succeeded' } });
      const rank = (await org.get<RankView>(`/api/runs/${run.id}/rank`)).body;
      expect(rank).toMatchObject({ mode: 'baseline', rank: null, eligible: false, isBest: false });
      expect(rank.reason).toMatch(/never ranks/);
      expect((await alice.get<LeaderboardView>('/api/leaderboards/toy-decode')).body.entries).toEqual(
        boardBefore,
      );
      const audit = await hub.dataSource.query(
        `SELECT reason, details FROM audit_log WHERE action = 'baseline.remeasure' ORDER BY at DESC LIMIT 1`,
      );
      expect(audit[0]).toMatchObject({
        reason: REASON,
        details: { hardware: 'cpu', samples: 12, runId: run.id },
      });

      // The next public run is scored against the re-measured figures and still writes nothing.
      const pub = await alice.startRun(await alice.upload(await toyStarter()), 'public');
      const pa = await assignment(pub.id);
      expect(pa.spec.kind === 'decode' && pa.spec.baseline?.workloads['short']).toMatchObject({
        totalMs: 42,
      });
      await agent.events(pub.id, [baselineEvent('cpu', true, 7)]);
      await agent.finish(pub.id, { ...measured(20, 7), score: 99, indicative: true });
      expect((await cached())[0].figures.workloads['short'].totalMs).toBe(42);
    });

    it('a verdict with fewer than 10 samples, or from other hardware, fails and caches nothing', async () => {
      for (const [result, why] of [
        [measured(9, 5), /fewer than 10/],
        [measured(12, 5, 'NVIDIA H200'), /not on cpu/],
      ] as const) {
        const res = await remeasure(org, { reason: REASON, hardware: 'cpu' });
        expect(res.status).toBe(201);
        const id = (res.body.run as RunView).id;
        await assignment(id);
        expect((await agent.finish(id, result)).ok).toBe(true);
        const done = await org.get<RunView>(`/api/runs/${id}`);
        expect(done.body).toMatchObject({ status: 'failed', failureCode: 'harness_error' });
        expect(done.body.message).toMatch(why);
        expect((await cached())[0].figures.workloads['short'].totalMs).toBe(42);
      }
      // Organizers may cancel one; a team member cannot even see it.
      agent.accept = false;
      const queued = (await remeasure(org, { reason: REASON })).body.run as RunView;
      expect((await alice.post(`/api/runs/${queued.id}/cancel`, { reason: 'mine?' })).status).toBe(404);
      const canceled = await org.post(`/api/runs/${queued.id}/cancel`, { reason: 'wrong moment' });
      expect([canceled.status, canceled.body.run.status]).toEqual([200, 'canceled']);
      agent.accept = true;
      const view = (await org.get<BaselinesView>('/api/admin/benchmarks/toy-decode/baselines')).body;
      expect(view.remeasures.map((r) => r.status)).toEqual(['canceled', 'failed', 'failed', 'succeeded']);
      expect((await cached())[0].figures.workloads['short'].totalMs).toBe(42);
    });

    it('an official run’s paired medians update the workloads it measured and keep the public ones the re-measure wrote', async () => {
      // The re-measure above cached all four workloads (totalMs 42); an official run measures the
      // hidden two only. Replacing the whole row would leave public runs with no cached figures
      // for their workloads, so each would time a one-sample baseline of its own again.
      await officialRun(alice, 100.4, 98, 103);
      const row = (await cached()).find((r) => r.hardware === 'cpu')!;
      expect(Object.keys(row.figures.workloads).sort()).toEqual([...ALL].sort());
      expect(row.figures.workloads['h-wide'].totalMs).toBe(FIG.totalMs);
      expect(row.figures.workloads['h-deep'].totalMs).toBe(FIG.totalMs);
      expect(row.figures.workloads['short'].totalMs).toBe(42);
      expect(row.figures.workloads['long'].totalMs).toBe(42);
      const pub = await alice.startRun(await alice.upload(await toyStarter()), 'public');
      const pa = await assignment(pub.id);
      expect(pa.spec.kind === 'decode' && pa.spec.baseline?.workloads).toMatchObject({
        short: { totalMs: 42 },
        long: { totalMs: 42 },
      });
      await agent.finish(pub.id, { ...measured(20, 7), score: 99, indicative: true });
    });

    it('goes only to an agent of the requested GPU model; with several models the hardware must be named', async () => {
      const gpu = async (name: string, gpuModel: string) => {
        const g = new FakeAgent(hub.baseUrl, (await org.createAgent(name)).token);
        expect((await g.ready({ capabilities: { accelerator: 'gpu', gpuModel, gpuCount: 1 } })).ok).toBe(
          true,
        );
        return g;
      };
      const h100 = await gpu('scores-h100', 'NVIDIA H100 80GB HBM3');
      const h200 = await gpu('scores-h200', 'NVIDIA H200');
      try {
        const vague = await remeasure(org, { reason: REASON }, 'qwen3-4b-decode');
        expect([vague.status, vague.body.error.code]).toEqual([400, 'hardware_required']);
        expect(vague.body.error.details.known).toEqual(['NVIDIA H100 80GB HBM3', 'NVIDIA H200']);
        const res = await remeasure(org, { reason: REASON, hardware: 'NVIDIA H200' }, 'qwen3-4b-decode');
        expect(res.status).toBe(201);
        const id = (res.body.run as RunView).id;
        const a = await until('the H200 assignment', () => h200.assigned.find((x) => x.runId === id), 10_000);
        expect(a.spec).toMatchObject({ kind: 'decode', mode: 'baseline', samplesPerWorkload: 10 });
        await new Promise((r) => setTimeout(r, 300));
        expect(h100.assigned).toEqual([]);
        const fig = { totalMs: 900, ttftMs: 80, tpotMs: 20 };
        const names = a.spec.kind === 'decode' ? a.spec.workloads.map((w) => w.name) : [];
        const ack = await h200.finish(id, {
          ...measured(10, 900, 'NVIDIA H200'),
          baseline: {
            hardware: 'NVIDIA H200',
            samples: 10,
            workloads: Object.fromEntries(names.map((w) => [w, fig])),
          },
        });
        expect(ack.ok).toBe(true);
        const rows = (await hub.dataSource.query(
          `SELECT hardware FROM baselines WHERE benchmark_id = 'qwen3-4b-decode'`,
        )) as { hardware: string }[];
        expect(rows.map((r) => r.hardware)).toEqual(['NVIDIA H200']);
      } finally {
        h100.socket.close();
        h200.socket.close();
      }
    });
  });
});
