import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { HarnessEvent, RunAssign, RunResultView, LeaderboardView, RankView } from '@dryft/libs';
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
    expect(pa.spec).toMatchObject({ kind: 'decode', mode: 'public', baseline: null, samplesPerWorkload: 5 });
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
});
