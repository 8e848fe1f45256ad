import {
  RunView,
  type HarnessSampleEvent,
  type LeaderboardEntry,
  type RunResultView,
  type WorkloadSummary,
} from '../src';

export const RUN_ID = '11111111-1111-4111-8111-111111111111';
export const TEAM_ID = '33333333-3333-4333-8333-333333333333';

/** A valid run view (parsed by the libs schema), running on gpu-1, for tests of live following. */
export const runView = (over: Partial<RunView> = {}): RunView =>
  RunView.parse({
    id: RUN_ID,
    submissionId: '22222222-2222-4222-8222-222222222222',
    submissionName: 'upload #1',
    benchmarkId: 'toy-decode',
    teamId: TEAM_ID,
    createdBy: '44444444-4444-4444-8444-444444444444',
    mode: 'public',
    tier: null,
    dataset: null,
    status: 'running',
    failureCode: null,
    message: null,
    cancelReason: null,
    queuePosition: null,
    score: null,
    rulesVersion: 1,
    invalidated: false,
    invalidatedReason: null,
    agentName: 'gpu-1',
    createdAt: '2026-11-30T05:00:00.000Z',
    assignedAt: null,
    startedAt: null,
    finishedAt: null,
    deadlineAt: null,
    lastLogSeq: 0,
    ...over,
  });

/**
 * A leaderboard entry with no interval and no overlaps, for tests of boards and their diffs. Its
 * keys come in the order the API writes them (diff tests compare the JSON byte for byte).
 */
export const leaderboardEntry = (
  over: Pick<LeaderboardEntry, 'rank' | 'teamSlug' | 'score' | 'runId'> & Partial<LeaderboardEntry>,
): LeaderboardEntry => {
  const e = {
    name: `Team ${over.teamSlug}`,
    userLogin: null,
    interval: null,
    pairs: null,
    overlapsPrevious: false,
    overlapsNext: false,
    achievedAt: '2026-11-30T12:00:00.000Z',
    ...over,
  };
  return {
    rank: e.rank,
    name: e.name,
    teamSlug: e.teamSlug,
    userLogin: e.userLogin,
    score: e.score,
    interval: e.interval,
    pairs: e.pairs,
    overlapsPrevious: e.overlapsPrevious,
    overlapsNext: e.overlapsNext,
    runId: e.runId,
    achievedAt: e.achievedAt,
  };
};

/** A harness `sample` event of one measured (not warm-up) sample, for batch tests. */
export const sampleEvent = (over: Partial<HarnessSampleEvent> = {}): HarnessSampleEvent => ({
  type: 'sample',
  workload: 'w',
  warmup: false,
  index: 0,
  ttftMs: 1,
  tpotMs: 1,
  tps: 1,
  totalMs: 1,
  tokens: 1,
  ...over,
});

/** A run's result as GET /api/runs/:id/result answers it (a finished public decode run by default). */
export const resultView = (over: Partial<RunResultView> & { run?: Partial<RunView> } = {}): RunResultView => {
  const { run, ...rest } = over;
  return {
    run: runView({ status: 'succeeded', score: 100, ...run }),
    score: 100,
    interval: null,
    pairs: null,
    indicative: true,
    workloads: [],
    samples: [],
    checks: [],
    metrics: {},
    detail: null,
    complete: true,
    ...rest,
  };
};

export const workloadSummary = (over: Partial<WorkloadSummary> = {}): WorkloadSummary => ({
  workload: 'short',
  samples: 5,
  tps: 1000,
  ttftMs: 10,
  tpotMs: 1,
  totalMs: 100,
  spreadPct: 2,
  speedup: 1,
  ...over,
});
