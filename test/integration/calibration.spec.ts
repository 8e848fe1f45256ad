import { existsSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type {
  AdminRunView,
  BaselinesView,
  BenchmarkDefinition,
  HarnessResultEvent,
  PublicBenchmark,
  RunAssign,
  RunResultView,
  RunView,
} from '@dryft/libs';
import { poolCalibration } from '@dryft/libs';
import { deriveHiddenSeed, loadBenchmarkDefinitions } from '@dryft/libs/node';
import { HttpUser, toyStarter, until } from '../support/agent-helpers';
import { FakeAgent } from '../support/fake-agent';
import { startTestHub, TestHub } from '../support/hub';

const ROOT = path.resolve(__dirname, '../..');
const ALL = ['short', 'long', 'h-wide', 'h-deep'];
const REASON = 'first calibration of the CPU key';

/** The shipped definitions, plus a copy of toy-decode without a reference engine. */
function definitions(): BenchmarkDefinition[] {
  const defs = loadBenchmarkDefinitions(path.join(ROOT, 'config/benchmarks'));
  const toy = defs.find((d) => d.id === 'toy-decode')!;
  return [...defs, { ...toy, id: 'toy-noref', referenceEngine: null }];
}

/** A calibration run's verdict: per workload, `n` ratios around `k` (deterministic). */
const calibrated = (
  k: number,
  n: number,
  opts: { hardware?: string; drop?: string; seconds?: number } = {},
) => {
  const workloads = Object.fromEntries(
    ALL.filter((w) => w !== opts.drop).map((w, wi) => [
      w,
      {
        ratios: Array.from({ length: n }, (_, i) => +(k * (1 + 0.01 * ((i * 7 + wi) % 5) - 0.02)).toFixed(4)),
      },
    ]),
  );
  return {
    status: 'succeeded',
    failureCode: null,
    message: 'Calibrated K on cpu',
    score: null,
    workloads: [],
    metrics: {},
    calibration: {
      hardware: opts.hardware ?? 'cpu: AMD EPYC 7B13',
      pairs: n,
      seconds: opts.seconds ?? 30,
      halfWidthPct: 1.2,
      workloads,
    },
  } satisfies Omit<HarnessResultEvent, 'type'>;
};

describe('calibration of K: the route, pooling, and K in the next official run', () => {
  let hub: TestHub;
  let org: HttpUser;
  let alice: HttpUser;
  let one: FakeAgent;
  let two: FakeAgent;

  beforeAll(async () => {
    hub = await startTestHub({ env: { ADMIN_LOGINS: 'cal-org' }, definitions: definitions() });
    org = await HttpUser.signIn(hub.baseUrl, 'cal-org');
    alice = await HttpUser.signIn(hub.baseUrl, 'cal-alice');
    await alice.createTeam();
    one = new FakeAgent(hub.baseUrl, (await org.createAgent('cal-cpu-1')).token);
    two = new FakeAgent(hub.baseUrl, (await org.createAgent('cal-cpu-2')).token);
    expect((await one.ready()).ok).toBe(true);
    expect((await two.ready()).ok).toBe(true);
  });
  afterAll(async () => {
    // What the last verdict set off (dispatch, notifications) ends before the database closes.
    await new Promise((r) => setTimeout(r, 300));
    one?.socket.close();
    two?.socket.close();
    await hub?.close();
  });

  const calibrate = (user: HttpUser, body: Record<string, unknown>, benchmark = 'toy-decode') =>
    user.post(`/api/admin/benchmarks/${benchmark}/baselines/remeasure`, { mode: 'calibration', ...body });
  const assignment = (runId: string): Promise<{ agent: FakeAgent; assign: RunAssign }> =>
    until(
      'assignment',
      () => {
        for (const agent of [one, two]) {
          const assign = agent.assigned.find((a) => a.runId === runId);
          if (assign) return { agent, assign };
        }
        return undefined;
      },
      10_000,
    );
  const stored = async () =>
    (await hub.dataSource.query(
      `SELECT run_id, workloads FROM calibration_runs WHERE benchmark_id = 'toy-decode' ORDER BY created_at`,
    )) as { run_id: string; workloads: Record<string, { ratios: number[] }> }[];

  it('is refused with a clear code, queuing and recording nothing', async () => {
    const cases: [HttpUser, Record<string, unknown>, string, number, string][] = [
      [alice, { reason: REASON }, 'toy-decode', 403, 'organizers_only'],
      [org, { reason: REASON }, 'recurrence-cpu', 400, 'no_baseline'],
      [org, { reason: REASON }, 'toy-noref', 422, 'no_reference'],
      [org, { reason: REASON, budgetSeconds: 5 }, 'toy-decode', 400, 'budget_out_of_range'],
      [org, { reason: REASON, budgetSeconds: 100_000 }, 'toy-decode', 400, 'budget_out_of_range'],
      [org, { reason: REASON, targetHalfWidthPct: 0.01 }, 'toy-decode', 400, 'target_out_of_range'],
      [org, { reason: REASON, targetHalfWidthPct: 25 }, 'toy-decode', 400, 'target_out_of_range'],
      [org, { reason: REASON, parts: 0 }, 'toy-decode', 400, 'parts_out_of_range'],
      [org, { reason: REASON, parts: 1.5 }, 'toy-decode', 400, 'parts_out_of_range'],
      [org, { reason: REASON, parts: 17 }, 'toy-decode', 400, 'parts_out_of_range'],
      [org, { reason: REASON, samples: 12 }, 'toy-decode', 400, 'samples_not_allowed'],
      [org, { reason: REASON, hardware: 'NVIDIA H200' }, 'toy-decode', 422, 'unknown_hardware'],
      [org, { reason: REASON, mode: 'sideways' }, 'toy-decode', 400, 'invalid_request'],
      [org, {}, 'toy-decode', 400, 'invalid_request'],
    ];
    for (const [user, body, benchmark, status, code] of cases) {
      const res = await calibrate(user, body, benchmark);
      expect([res.status, res.body.error?.code], JSON.stringify(body)).toEqual([status, code]);
      expect(res.body.error.message.length).toBeGreaterThan(20);
    }
    const baseline = await org.post('/api/admin/benchmarks/toy-decode/baselines/remeasure', {
      reason: REASON,
      parts: 2,
    });
    expect([baseline.status, baseline.body.error.code]).toEqual([400, 'calibration_fields_not_allowed']);
    const runs = await hub.dataSource.query(`SELECT count(*)::int AS n FROM runs WHERE mode = 'calibration'`);
    expect(runs[0].n).toBe(0);
    const audit = await hub.dataSource.query(
      `SELECT count(*)::int AS n FROM audit_log WHERE action = 'baseline.calibrate'`,
    );
    expect(audit[0].n).toBe(0);
  });

  it('queues parts that two agents of the key take; a part that succeeds is pooled, a bad one is not', async () => {
    const res = await calibrate(org, {
      reason: REASON,
      parts: 2,
      budgetSeconds: 90,
      targetHalfWidthPct: 0.8,
    });
    expect(res.status).toBe(201);
    const runs = res.body.runs as RunView[];
    expect(runs.map((r) => [r.mode, r.submissionId, r.teamId, r.status])).toEqual([
      ['calibration', null, null, 'queued'],
      ['calibration', null, null, 'queued'],
    ]);
    expect(res.body.run.id).toBe(runs[0].id);
    const again = await calibrate(org, { reason: REASON });
    expect([again.status, again.body.error.code]).toEqual([409, 'calibration_pending']);
    expect(again.body.error.details.runIds.sort()).toEqual(runs.map((r) => r.id).sort());

    const [a1, a2] = [await assignment(runs[0].id), await assignment(runs[1].id)];
    // Split across agents: each one-slot CPU agent takes one part.
    expect(new Set([a1.agent, a2.agent]).size).toBe(2);
    expect(a1.assign.mode).toBe('calibration');
    expect(a1.assign.submission).toBeNull();
    expect(a1.assign.spec).toMatchObject({
      kind: 'decode',
      mode: 'calibration',
      referenceEngine: 'harness/reference/toy',
      calibrate: { targetHalfWidthPct: 0.8, maxPairs: 200, budgetSeconds: 90 },
      baseline: null,
      calibration: null,
    });
    expect(a1.assign.spec.kind === 'decode' && a1.assign.spec.workloads.map((w) => w.name)).toEqual(ALL);
    // The whole-run limit leaves room for the budget and both engines' start.
    expect(a1.assign.spec.kind === 'decode' && a1.assign.spec.limits.runSeconds).toBeGreaterThan(90);
    expect((await alice.get(`/api/runs/${runs[0].id}`)).status).toBe(404);

    // Part 2 reports a workload short: harness_error, nothing pooled.
    expect((await a2.agent.finish(runs[1].id, calibrated(2, 8, { drop: 'h-deep' }))).ok).toBe(true);
    const bad = (await org.get<RunView>(`/api/runs/${runs[1].id}`)).body;
    expect(bad).toMatchObject({ status: 'failed', failureCode: 'harness_error', score: null });
    expect(bad.message).toMatch(/no pairs for h-deep; nothing was pooled/);
    expect(await stored()).toEqual([]);

    // Part 1 succeeds: its ratios are stored and pooled.
    const good = calibrated(2, 8, { seconds: 42 });
    expect((await a1.agent.finish(runs[0].id, good)).ok).toBe(true);
    expect((await org.get<RunView>(`/api/runs/${runs[0].id}`)).body).toMatchObject({
      status: 'succeeded',
      score: null,
    });
    expect((await stored()).map((r) => r.run_id)).toEqual([runs[0].id]);
    const view = (await org.get<BaselinesView>('/api/admin/benchmarks/toy-decode/baselines')).body;
    const expected = poolCalibration('cpu', [{ runId: runs[0].id, workloads: good.calibration.workloads }]);
    expect(view.referenceEngine).toBe('harness/reference/toy');
    expect(view.calibrations).toHaveLength(1);
    expect(view.calibrations[0]).toMatchObject({
      hardware: 'cpu',
      rulesVersion: 1,
      halfWidthPct: expected.k.halfWidthPct,
      pairs: 8,
      runs: 1,
      gpuMinutes: 42 / 60,
    });
    expect(view.calibrations[0].workloads['h-wide']).toEqual({
      ...expected.k.workloads['h-wide'],
      halfWidthPct: expected.workloads['h-wide'].halfWidthPct,
      pairs: 8,
    });
    expect(view.calibrations[0].history).toMatchObject([{ runId: runs[0].id, pairs: 8, seconds: 42 }]);
    expect(view.remeasures.map((r) => [r.mode, r.part, r.status])).toEqual(
      expect.arrayContaining([
        ['calibration', 1, 'succeeded'],
        ['calibration', 2, 'failed'],
      ]),
    );
  });

  it('other hardware, or too few pairs, fails the run and pools nothing', async () => {
    for (const [result, why] of [
      [calibrated(2, 8, { hardware: 'NVIDIA H200' }), /not on cpu/],
      [calibrated(2, 3), /fewer than 4 pairs/],
    ] as const) {
      const res = await calibrate(org, { reason: REASON });
      expect(res.status).toBe(201);
      const id = (res.body.run as RunView).id;
      const { agent } = await assignment(id);
      expect((await agent.finish(id, result)).ok).toBe(true);
      const done = (await org.get<RunView>(`/api/runs/${id}`)).body;
      expect(done).toMatchObject({ status: 'failed', failureCode: 'harness_error' });
      expect(done.message).toMatch(why);
    }
    expect(await stored()).toHaveLength(1);
  });

  it('resumes: a later calibration adds its pairs to the same pool, with the spread between machines', async () => {
    const res = await calibrate(org, { reason: REASON });
    const id = (res.body.run as RunView).id;
    const { agent } = await assignment(id);
    const more = calibrated(2.2, 10, { seconds: 18 });
    expect((await agent.finish(id, more)).ok).toBe(true);
    const rows = await stored();
    expect(rows).toHaveLength(2);
    const expected = poolCalibration(
      'cpu',
      rows.map((r) => ({ runId: r.run_id, workloads: r.workloads })),
    );
    const view = (await org.get<BaselinesView>('/api/admin/benchmarks/toy-decode/baselines')).body;
    expect(view.calibrations[0]).toMatchObject({
      runs: 2,
      pairs: 18,
      halfWidthPct: expected.k.halfWidthPct,
      gpuMinutes: 1,
    });
    expect(expected.workloads.short.betweenLog).toBeGreaterThan(0);
    expect(view.calibrations[0].history.map((h) => h.runId)).toEqual([id, rows[0].run_id]);
    const audit = await hub.dataSource.query(
      `SELECT reason, details FROM audit_log WHERE action = 'baseline.calibrate' ORDER BY at LIMIT 1`,
    );
    expect(audit[0]).toMatchObject({
      reason: REASON,
      details: { hardware: 'cpu', parts: 2, budgetSeconds: 90 },
    });

    // The benchmark page's summary.
    const pub = (await alice.get<PublicBenchmark>('/api/benchmarks/toy-decode')).body;
    expect(pub.calibrations).toEqual([
      { hardware: 'cpu', halfWidthPct: expected.k.halfWidthPct, pairs: 18, runs: 2 },
    ]);
  });

  it('the next official run carries K, the reference engine and hidden seeds; its nonce is for organizers only', async () => {
    const k = (await org.get<BaselinesView>('/api/admin/benchmarks/toy-decode/baselines')).body
      .calibrations[0];
    const run = await alice.startRun(await alice.upload(await toyStarter()), 'official');
    const { agent, assign } = await assignment(run.id);
    expect(assign.spec.kind).toBe('decode');
    if (assign.spec.kind !== 'decode') return;
    expect(assign.spec.referenceEngine).toBe('harness/reference/toy');
    expect(assign.spec.calibration).toEqual({
      hardware: 'cpu',
      halfWidthPct: k.halfWidthPct,
      pairs: k.pairs,
      runs: 2,
      workloads: Object.fromEntries(
        Object.entries(k.workloads).map(([n, w]) => [n, { k: w.k, low: w.low, high: w.high }]),
      ),
    });
    expect(assign.spec.promptNonce).toBeNull();
    // Hidden workloads: flagged, with seeds the shipped yaml does not carry, derived from this
    // install's secret (DATA_DIR/hidden-seed.secret, mode 0600).
    const secretFile = path.join(hub.config.dataDir, 'hidden-seed.secret');
    expect(statSync(secretFile).mode & 0o777).toBe(0o600);
    const secret = readFileSync(secretFile, 'utf8').trim();
    expect(assign.spec.workloads).toEqual([
      {
        name: 'h-wide',
        batchSize: 8,
        promptLength: 32,
        maxNewTokens: 16,
        seed: deriveHiddenSeed(secret, 'toy-decode', 'h-wide'),
        hidden: true,
      },
      {
        name: 'h-deep',
        batchSize: 2,
        promptLength: 96,
        maxNewTokens: 32,
        seed: deriveHiddenSeed(secret, 'toy-decode', 'h-deep'),
        hidden: true,
      },
    ]);

    const nonce = '0123456789abcdef0123456789abcdef';
    await agent.events(run.id, [{ type: 'log', level: 'info', message: 'paired with the reference' }]);
    const ack = await agent.finish(run.id, {
      status: 'succeeded',
      failureCode: null,
      message: 'Official score against the reference',
      score: 120,
      workloads: [],
      metrics: {},
      interval: { low: 118, high: 122, halfWidth: 2, level: 0.95 },
      absoluteInterval: { low: 115, high: 125, halfWidth: 5, level: 0.95 },
      scoring: {
        against: 'reference',
        calibrated: true,
        hardware: 'cpu',
        kHalfWidthPct: k.halfWidthPct,
        note: 'Paired with the reference engine; K calibrated on cpu.',
      },
      promptNonce: nonce,
      pairs: 7,
      indicative: false,
    });
    expect(ack.ok).toBe(true);
    const result = (await alice.get<RunResultView>(`/api/runs/${run.id}/result`)).body;
    expect(result).toMatchObject({
      score: 120,
      interval: { low: 118, high: 122 },
      absoluteInterval: { low: 115, high: 125, halfWidth: 5 },
      scoring: { against: 'reference', calibrated: true, note: /reference engine/ },
    });
    // The team never sees the nonce: not in its run view, result, runs list or log.
    for (const p of [
      `/api/runs/${run.id}`,
      `/api/runs/${run.id}/result`,
      '/api/runs',
      `/api/runs/${run.id}/logs`,
    ]) {
      const res = await alice.get(p);
      expect(res.status, p).toBe(200);
      expect(JSON.stringify(res.body), p).not.toContain(nonce);
    }
    // Organizers do, in their run view and the all-runs list.
    const adminRun = (await org.get<AdminRunView>(`/api/admin/runs/${run.id}`)).body;
    expect(adminRun).toMatchObject({ id: run.id, promptNonce: nonce, teamSlug: expect.any(String) });
    const list = (await org.get<{ items: AdminRunView[] }>('/api/admin/runs?limit=200')).body.items;
    expect(list.find((r) => r.id === run.id)?.promptNonce).toBe(nonce);
    expect((await alice.get(`/api/admin/runs/${run.id}`)).status).toBe(403);
    // The board's ≈ marks use the ranking interval.
    const board = (
      await alice.get<{ entries: { runId: string; interval: unknown }[] }>('/api/leaderboards/toy-decode')
    ).body;
    expect(board.entries.find((e) => e.runId === run.id)?.interval).toMatchObject({ low: 118, high: 122 });

    // A public run gets K too; its nonce (if a harness sent one) is not kept.
    const pubRun = await alice.startRun(await alice.upload(await toyStarter()), 'public');
    const pa = await assignment(pubRun.id);
    expect(pa.assign.spec.kind === 'decode' && pa.assign.spec.calibration?.runs).toBe(2);
    expect(pa.assign.spec.kind === 'decode' && pa.assign.spec.workloads.every((w) => !w.hidden)).toBe(true);
    await pa.agent.finish(pubRun.id, {
      status: 'succeeded',
      failureCode: null,
      message: 'Public score',
      score: 119,
      workloads: [],
      metrics: {},
      indicative: true,
      promptNonce: nonce,
    });
    expect((await org.get<AdminRunView>(`/api/admin/runs/${pubRun.id}`)).body.promptNonce).toBeNull();
  });

  it('a calibration run keeps its own whole-run limit when the organizer changes the benchmark’s', async () => {
    const id = ((await calibrate(org, { reason: REASON, budgetSeconds: 200 })).body.run as RunView).id;
    const { agent } = await assignment(id);
    const limit = async () =>
      (
        (await hub.dataSource.query(`SELECT run_time_limit_seconds AS s FROM runs WHERE id = $1`, [id])) as {
          s: number;
        }[]
      )[0].s;
    const before = await limit();
    expect(before).toBeGreaterThan(260);
    const patch = await org.req('PATCH', '/api/admin/benchmarks/toy-decode', {
      runTimeLimitSeconds: 120,
      reason: 'shorter runs',
    });
    expect(patch.status).toBe(200);
    expect(await limit()).toBe(before);
    await org.req('PATCH', '/api/admin/benchmarks/toy-decode', { runTimeLimitSeconds: 300, reason: 'back' });
    await agent.finish(id, {
      status: 'failed',
      failureCode: 'harness_error',
      message: 'stopped for the test',
      score: null,
      workloads: [],
      metrics: {},
    });
    expect(await stored()).toHaveLength(2);
  });

  it('DELETE …/baselines forgets K and its history, with audit; the next official run has none', async () => {
    const del = await org.delete(
      `/api/admin/benchmarks/toy-decode/baselines?hardware=cpu&reason=new%20driver`,
    );
    expect(del.status).toBe(200);
    expect(del.body).toMatchObject({ calibrations: 1 });
    expect(await stored()).toEqual([]);
    const view = (await org.get<BaselinesView>('/api/admin/benchmarks/toy-decode/baselines')).body;
    expect(view.calibrations).toEqual([]);
    expect((await alice.get<PublicBenchmark>('/api/benchmarks/toy-decode')).body.calibrations).toEqual([]);
    const audit = await hub.dataSource.query(
      `SELECT reason, details FROM audit_log WHERE action = 'baseline.remeasure' ORDER BY at DESC LIMIT 1`,
    );
    expect(audit[0]).toMatchObject({
      reason: 'new driver',
      details: { hardware: 'cpu', calibrationsDeleted: 1 },
    });
    const run = await alice.startRun(await alice.upload(await toyStarter()), 'official');
    const { agent, assign } = await assignment(run.id);
    expect(assign.spec.kind === 'decode' && assign.spec.calibration).toBeNull();
    await agent.finish(run.id, {
      status: 'failed',
      failureCode: 'candidate_error',
      message: 'stopped',
      score: null,
      workloads: [],
      metrics: {},
    });
  });
});

describe('hidden seeds: a secret the caller passes', () => {
  it('derives the official spec’s seeds from it and makes no secret file', async () => {
    const secret = 'c'.repeat(64);
    const hub = await startTestHub({ env: { ADMIN_LOGINS: 'seed-org' }, hiddenSeedSecret: secret });
    const agent = new FakeAgent(
      hub.baseUrl,
      (await (await HttpUser.signIn(hub.baseUrl, 'seed-org')).createAgent('seed-cpu')).token,
    );
    try {
      expect((await agent.ready()).ok).toBe(true);
      const alice = await HttpUser.signIn(hub.baseUrl, 'seed-alice');
      await alice.createTeam();
      const run = await alice.startRun(await alice.upload(await toyStarter()), 'official');
      const a = await until('assignment', () => agent.assigned.find((x) => x.runId === run.id), 10_000);
      expect(a.spec.kind === 'decode' && a.spec.workloads.map((w) => [w.name, w.seed, w.hidden])).toEqual([
        ['h-wide', deriveHiddenSeed(secret, 'toy-decode', 'h-wide'), true],
        ['h-deep', deriveHiddenSeed(secret, 'toy-decode', 'h-deep'), true],
      ]);
      expect(existsSync(path.join(hub.config.dataDir, 'hidden-seed.secret'))).toBe(false);
      await agent.finish(run.id, {
        status: 'failed',
        failureCode: 'candidate_error',
        message: 'x',
        score: null,
        workloads: [],
        metrics: {},
      });
    } finally {
      await new Promise((r) => setTimeout(r, 300));
      agent.socket.close();
      await hub.close();
    }
  });
});
