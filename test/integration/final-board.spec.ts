import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BenchmarkDefinition, FinalBoardAdminView, LeaderboardView } from '@dryft/libs';
import { loadBenchmarkDefinitions } from '@dryft/libs/node';
import { EventBus } from '../../apps/api/src/common/event-bus';
import { toyStarter } from '../support/archives';
import { ROOT, startTestHub, TestHub } from '../support/hub';
import { TestAgent } from '../support/test-agent';
import { ownerWithTeam, signIn, TestUser } from '../support/users';

const REASON = 'round 1 is over: verify the top two';

/** The shipped definitions (toy-decode: finalBoard k=2, m=3), plus a copy to close by the round clock. */
function definitions(): BenchmarkDefinition[] {
  const defs = loadBenchmarkDefinitions(path.join(ROOT, 'config/benchmarks'));
  const toy = defs.find((d) => d.id === 'toy-decode')!;
  return [...defs, { ...toy, id: 'toy-closing', title: 'Toy closing' }];
}

/**
 * Issue 33 item 2: the top k teams' best runs are re-run m times each (at a scheduled round close
 * or the organizer's button), the final board ranks them by the median, a best run its re-runs do
 * not reproduce is flagged, and the live board stays until the organizer publishes the final one.
 */
describe('the verified final board', () => {
  let hub: TestHub;
  let agent: TestAgent;
  let org: TestUser;
  const best: Record<string, string> = {};
  const published: { benchmarkId: string; publishedAt: number }[] = [];

  const land = async (runId: string, score: number, halfWidth = 3) => {
    await agent.claim(runId);
    await agent.finish(runId, {
      status: 'succeeded',
      score,
      interval: { low: score - halfWidth, high: score + halfWidth, halfWidth, level: 0.95 },
      pairs: 6,
      workloads: [],
      message: 'All checks passed.',
    });
  };
  const team = async (login: string, name: string, score: number, benchmark = 'toy-decode') => {
    const { owner } = await ownerWithTeam(hub, login, name);
    const up = await owner.upload(
      '/api/submissions',
      { benchmark },
      { name: 'e.tar.gz', content: await toyStarter() },
    );
    const run = await owner.post(`/api/submissions/${up.body.submission.id}/runs`, {
      mode: 'official',
      confirm: true,
    });
    expect(run.status, JSON.stringify(run.body)).toBe(201);
    await land(run.body.run.id, score);
    return { owner, runId: run.body.run.id as string };
  };

  beforeAll(async () => {
    hub = await startTestHub({ env: { ADMIN_LOGINS: 'fb-org' }, definitions: definitions() });
    agent = new TestAgent(hub);
    org = await signIn(hub, 'fb-org');
    hub.app.get(EventBus).on('leaderboard.final_published', (e) => void published.push(e));
    best.ann = (await team('fb-ann', 'Ann', 130)).runId;
    best.bob = (await team('fb-bob', 'Bob', 120)).runId;
    best.cat = (await team('fb-cat', 'Cat', 110)).runId;
  });
  afterAll(async () => {
    await new Promise((r) => setTimeout(r, 300));
    await hub?.close();
  });

  it('is organizers only, and says so before it is started', async () => {
    const { owner } = await ownerWithTeam(hub, 'fb-dan', 'Dan');
    for (const [method, url] of [
      ['post', '/api/admin/benchmarks/toy-decode/final-board'],
      ['get', '/api/admin/benchmarks/toy-decode/final-board'],
      ['post', '/api/admin/benchmarks/toy-decode/final-board/publish'],
    ] as const) {
      const res = method === 'get' ? await owner.get(url) : await owner.post(url, { reason: REASON });
      expect([url, res.status, res.body.error.code]).toEqual([url, 403, 'organizers_only']);
    }
    const none = await org.get('/api/admin/benchmarks/toy-decode/final-board');
    expect([none.status, none.body.error.code]).toEqual([404, 'final_board_not_started']);
    const early = await org.post('/api/admin/benchmarks/toy-decode/final-board/publish', { reason: REASON });
    expect([early.status, early.body.error.code]).toEqual([404, 'final_board_not_started']);
    expect((await org.post('/api/admin/benchmarks/toy-decode/final-board', {})).status).toBe(400);
    const empty = await org.post('/api/admin/benchmarks/recurrence-cpu/final-board', { reason: REASON });
    expect([empty.status, empty.body.error.code]).toEqual([409, 'no_eligible_runs']);
    const final = await hub.http.get('/api/leaderboards/toy-decode?board=final');
    expect([final.status, final.body.error.code]).toEqual([404, 'final_board_not_published']);
    const bad = await hub.http.get('/api/leaderboards/toy-decode?board=best');
    expect([bad.status, bad.body.error.code]).toEqual([400, 'invalid_board']);
  });

  it('re-runs the top 2 three times each, ranks them by the median, flags what is not reproduced, and publishes', async () => {
    const start = await org.post('/api/admin/benchmarks/toy-decode/final-board', { reason: REASON });
    expect(start.status, JSON.stringify(start.body)).toBe(201);
    const view = start.body as FinalBoardAdminView;
    expect(view.batch).toMatchObject({ kind: 'final', topK: 2, rerunsPerRun: 3, counts: { queued: 6 } });
    const of = (source: string) =>
      view.batch.pairs.filter((p) => p.sourceRunId === source).map((p) => p.rerunId);
    expect(of(best.ann)).toHaveLength(3);
    expect(of(best.bob)).toHaveLength(3);
    expect(of(best.cat)).toHaveLength(0);
    const audit = (await org.get('/api/admin/audit?action=final_board.start')).body.items[0];
    expect(audit).toMatchObject({
      reason: REASON,
      details: { topK: 2, reruns: 3, sourceRunIds: [best.ann, best.bob] },
    });
    expect(
      (await org.post('/api/admin/benchmarks/toy-decode/final-board', { reason: REASON })).body.error.code,
    ).toBe('final_board_exists');

    // Ann's 130 (127–133) is not reproduced (median 119); Bob's 120 (117–123) is (median 121).
    const [a1, a2, a3] = of(best.ann);
    await land(a1, 118);
    await land(a2, 121);
    const incomplete = await org.post('/api/admin/benchmarks/toy-decode/final-board/publish', {
      reason: REASON,
    });
    expect([incomplete.status, incomplete.body.error.code]).toEqual([409, 'final_board_incomplete']);
    expect(incomplete.body.error.message).toContain('4 of the final board');
    await land(a3, 119);
    const [b1, b2, b3] = of(best.bob);
    await land(b1, 122);
    await land(b2, 121);
    await land(b3, 120);

    const draft = (await org.get('/api/admin/benchmarks/toy-decode/final-board')).body as FinalBoardAdminView;
    expect(draft.publishedAt).toBeNull();
    expect(draft.batch.done).toBe(true);
    const verified = (runId: string) => draft.board.verifications?.find((v) => v.runId === runId);
    expect(
      draft.board.entries.map((e) => [e.rank, e.name, e.score, verified(e.runId)?.reproduced ?? null]),
    ).toEqual([
      [1, 'Bob', 121, true],
      [2, 'Ann', 119, false],
      [3, 'Cat', 110, null],
    ]);
    expect(draft.board.entries[0]).toMatchObject({
      runId: best.bob,
      interval: { low: 118, high: 124 },
      overlapsNext: true,
    });
    expect(verified(best.bob)).toMatchObject({
      reruns: 3,
      succeeded: 3,
      scores: [122, 121, 120],
      sourceScore: 120,
    });
    expect(verified(best.cat)).toBeUndefined();
    expect(draft.flags).toEqual([
      expect.objectContaining({
        name: 'Ann',
        sourceRunId: best.ann,
        sourceScore: 130,
        median: 119,
        sourceInterval: expect.objectContaining({ low: 127, high: 133 }),
      }),
    ]);
    expect(draft.flags[0].message).toContain('outside the best run');

    // Until published, spectators see the live board only.
    const live = (await hub.http.get('/api/leaderboards/toy-decode')).body as LeaderboardView;
    expect(live.entries.map((e) => [e.name, e.score])).toEqual([
      ['Ann', 130],
      ['Bob', 120],
      ['Cat', 110],
    ]);
    expect(live).toMatchObject({ board: 'live', finalPublishedAt: null });
    expect((await hub.http.get('/api/benchmarks/toy-decode/leaderboard?board=final')).status).toBe(404);

    const pub = await org.post('/api/admin/benchmarks/toy-decode/final-board/publish', {
      reason: 'verified',
    });
    expect(pub.status, JSON.stringify(pub.body)).toBe(200);
    expect(pub.body.publishedBy).toBe('fb-org');
    await expect.poll(() => published.length).toBe(1);
    expect(published[0]).toEqual({
      benchmarkId: 'toy-decode',
      publishedAt: Date.parse(pub.body.publishedAt),
    });
    const final = await hub.http.get('/api/benchmarks/toy-decode/leaderboard?board=final');
    expect(final.status).toBe(200);
    expect(final.body).toMatchObject({ board: 'final', finalPublishedAt: pub.body.publishedAt });
    expect(final.body.entries.map((e: { name: string }) => e.name)).toEqual(['Bob', 'Ann', 'Cat']);
    expect((await hub.http.get('/api/leaderboards/toy-decode?board=final')).body.entries[0].score).toBe(121);
    // the live board stays as it is, and now says a final one exists
    const after = (await hub.http.get('/api/leaderboards/toy-decode')).body as LeaderboardView;
    expect(after.entries.map((e) => e.name)).toEqual(['Ann', 'Bob', 'Cat']);
    expect(after.finalPublishedAt).toBe(pub.body.publishedAt);
    expect((await org.get('/api/admin/audit?action=final_board.publish')).body.items[0]).toMatchObject({
      reason: 'verified',
      target: { kind: 'benchmark', id: 'toy-decode' },
      details: { flags: [expect.objectContaining({ name: 'Ann', median: 119 })] },
    });
    const again = await org.post('/api/admin/benchmarks/toy-decode/final-board/publish', { reason: REASON });
    expect([again.status, again.body.error.code]).toEqual([409, 'final_board_published']);
    // the published board is frozen: a better live run later does not change it
    await team('fb-eve', 'Eve', 150);
    expect(
      (await hub.http.get('/api/leaderboards/toy-decode?board=final')).body.entries.map(
        (e: { name: string }) => e.name,
      ),
    ).toEqual(['Bob', 'Ann', 'Cat']);
  });

  it('starts by itself at the round clock’s scheduled close, in the scheduling organizer’s name', async () => {
    await team('fb-fay', 'Fay', 105, 'toy-closing');
    const at = new Date(Date.now() + 1500).toISOString();
    const scheduled = await org.post('/api/admin/benchmarks/toy-closing/schedule', {
      action: 'close',
      target: 'both',
      at,
      reason: 'end of round 1',
    });
    expect(scheduled.status).toBe(201);
    await expect
      .poll(async () => (await org.get('/api/admin/benchmarks/toy-closing/final-board')).status, {
        timeout: 15_000,
      })
      .toBe(200);
    const view = (await org.get('/api/admin/benchmarks/toy-closing/final-board')).body as FinalBoardAdminView;
    expect(view.batch).toMatchObject({
      createdBy: 'fb-org',
      reason: 'round closed: end of round 1',
      counts: { queued: 3 },
    });
  });
});
