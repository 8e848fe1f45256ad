import { io, Socket } from 'socket.io-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { applyLeaderboardDiff } from '@dryft/libs';
import type { LeaderboardDiffEvent, LeaderboardView } from '@dryft/libs';
import { toyStarter } from '../support/archives';
import { startTestHub, TestHub } from '../support/hub';
import { TestAgent } from '../support/test-agent';
import { ownerWithTeam, signIn, TestUser, withToken } from '../support/users';

const connect = async (url: string, cookie?: string): Promise<Socket> => {
  const s = io(`${url}/live`, {
    transports: ['websocket'],
    forceNew: true,
    extraHeaders: cookie ? { cookie } : undefined,
    reconnection: false,
  });
  await new Promise<void>((resolve, reject) => {
    s.once('connect', () => resolve());
    s.once('connect_error', reject);
  });
  return s;
};

describe("the organizer's console: disqualification, every run, export", () => {
  let hub: TestHub;
  let agent: TestAgent;
  let organizer: TestUser;
  let ann: TestUser;
  let annTeam: { id: string; slug: string; inviteCode: string };
  let bob: TestUser;
  let bobTeam: { id: string; slug: string };
  const runs: Record<string, string> = {};
  const subs: Record<string, string> = {};

  const official = async (user: TestUser, key: string, score: number) => {
    const up = await user.upload(
      '/api/submissions',
      { benchmark: 'toy-decode' },
      { name: `${key}.tar.gz`, content: await toyStarter() },
    );
    subs[key] = up.body.submission.id;
    const run = (await user.post(`/api/submissions/${subs[key]}/runs`, { mode: 'official', confirm: true }))
      .body.run;
    await agent.complete(run.id, score);
    runs[key] = run.id;
  };

  beforeAll(async () => {
    hub = await startTestHub({ env: { ADMIN_LOGINS: 'org-boss' } });
    // The score interval lives in runs.score_interval (jsonb) on hubs that measure one; the export
    // reads it when the column exists. Created here when this checkout's migrations lack it.
    await hub.dataSource.query('ALTER TABLE runs ADD COLUMN IF NOT EXISTS score_interval jsonb');
    agent = new TestAgent(hub);
    organizer = await signIn(hub, 'org-boss');
    ({ owner: ann, team: annTeam } = await ownerWithTeam(hub, 'org-ann', 'Ann, "Fast" Co'));
    const mate = await signIn(hub, 'org-ann-mate');
    await mate.post('/api/teams/join', { code: annTeam.inviteCode });
    ({ owner: bob, team: bobTeam } = await ownerWithTeam(hub, 'org-bob', 'Bobcats'));
    await official(ann, 'ann1', 120);
    await official(ann, 'ann2', 150);
    await official(bob, 'bob1', 130);
  });
  afterAll(async () => hub?.close());

  const board = async () =>
    ((await hub.http.get('/api/leaderboards/toy-decode')).body as LeaderboardView).entries.map((e) => [
      e.name,
      e.score,
    ]);

  it('only organizers disqualify, with a reason, and only official succeeded results', async () => {
    const body = { reason: 'read the hidden workloads from disk' };
    expect((await ann.post(`/api/admin/runs/${runs.bob1}/disqualify`, body)).body.error.code).toBe(
      'organizers_only',
    );
    const token = (await bob.post(`/api/teams/${bobTeam.id}/tokens`, { name: 't' })).body.token;
    expect((await withToken(hub, token).post(`/api/admin/runs/${runs.bob1}/disqualify`, body)).status).toBe(
      403,
    );
    const noReason = await organizer.post(`/api/admin/runs/${runs.bob1}/disqualify`, {});
    expect(noReason.status).toBe(400);
    expect(noReason.body.error.message).toMatch(/reason/);
    const missing = await organizer.post(
      `/api/admin/runs/00000000-0000-4000-8000-000000000000/disqualify`,
      body,
    );
    expect([missing.status, missing.body.error.code]).toEqual([404, 'run_not_found']);
    const pub = (await ann.post(`/api/submissions/${subs.ann1}/runs`, { mode: 'public' })).body.run;
    const notResult = await organizer.post(`/api/admin/runs/${pub.id}/disqualify`, body);
    expect([notResult.status, notResult.body.error.code]).toEqual([409, 'not_an_official_result']);
    expect(await board()).toEqual([
      ['Ann, "Fast" Co', 150],
      ['Bobcats', 130],
    ]);
  });

  it('takes a result off the leaderboard at once (live), recomputes the best, shows the reason, and is reversible', async () => {
    const spectator = await connect(hub.baseUrl);
    const joined = await spectator.emitWithAck('leaderboard.join', { benchmarkId: 'toy-decode' });
    expect(joined.leaderboardVersion).toEqual(expect.any(String));
    // The change comes as the whole board or as a diff from the board the join answered with.
    const update = new Promise<LeaderboardView>((resolve) => {
      spectator.on('leaderboard.update', (e: { leaderboard: LeaderboardView }) => resolve(e.leaderboard));
      spectator.on('leaderboard.diff', (d: LeaderboardDiffEvent) =>
        resolve(applyLeaderboardDiff(joined.leaderboard, joined.leaderboardVersion, d)!),
      );
    });
    const dq = await organizer.post(`/api/admin/runs/${runs.ann2}/disqualify`, {
      reason: 'timed its own clock',
    });
    expect(dq.status).toBe(200);
    expect(dq.body).toMatchObject({ id: runs.ann2, disqualifiedReason: 'timed its own clock' });
    expect(dq.body.disqualifiedAt).toEqual(expect.any(String));
    const live = await update;
    // Ann's best falls back to her earlier 120 and she drops below Bobcats.
    expect(live.entries.map((e) => [e.name, e.score, e.runId])).toEqual([
      ['Bobcats', 130, runs.bob1],
      ['Ann, "Fast" Co', 120, runs.ann1],
    ]);
    spectator.close();
    const twice = await organizer.post(`/api/admin/runs/${runs.ann2}/disqualify`, { reason: 'again' });
    expect([twice.status, twice.body.error.code]).toEqual([409, 'already_disqualified']);

    // The team sees why on its run and its rank; the public team page shows it too.
    const mine = await ann.get(`/api/runs/${runs.ann2}`);
    expect(mine.body.disqualifiedReason).toBe('timed its own clock');
    const rank = await ann.get(`/api/runs/${runs.ann2}/rank`);
    expect(rank.body).toMatchObject({ eligible: false, rank: null });
    expect(rank.body.reason).toBe('Disqualified by an organizer: timed its own clock.');
    const page = await hub.http.get(`/api/public/teams/${annTeam.slug}`);
    expect(page.body.places).toEqual([{ benchmarkId: 'toy-decode', rank: 2, score: 120 }]);
    expect(page.body.history.map((h: { score: number }) => h.score)).toEqual([120]);
    expect(page.body.disqualified).toEqual([
      expect.objectContaining({
        benchmarkId: 'toy-decode',
        runId: runs.ann2,
        score: 150,
        reason: 'timed its own clock',
      }),
    ]);

    // Bob's only result disqualified: his team leaves the board, and its page still says why.
    await organizer.post(`/api/admin/runs/${runs.bob1}/disqualify`, { reason: 'shared code with Ann' });
    expect(await board()).toEqual([['Ann, "Fast" Co', 120]]);
    const bobPage = await hub.http.get(`/api/public/teams/${bobTeam.slug}`);
    expect(bobPage.status).toBe(200);
    expect(bobPage.body.places).toEqual([]);
    expect(bobPage.body.disqualified[0]).toMatchObject({ runId: runs.bob1, reason: 'shared code with Ann' });

    // Reversible, with a reason; the audit log has all of it.
    const back = await organizer.post(`/api/admin/runs/${runs.ann2}/requalify`, {
      reason: 'appeal: clock was ours',
    });
    expect(back.body).toMatchObject({ disqualifiedReason: null, disqualifiedAt: null });
    expect(await board()).toEqual([['Ann, "Fast" Co', 150]]);
    const noop = await organizer.post(`/api/admin/runs/${runs.ann2}/requalify`, { reason: 'again' });
    expect([noop.status, noop.body.error.code]).toEqual([409, 'not_disqualified']);
    const audit = (await organizer.get(`/api/admin/audit?target=${runs.ann2}`)).body.items;
    expect(audit.map((e: { action: string; reason: string }) => [e.action, e.reason])).toEqual([
      ['run.requalify', 'appeal: clock was ours'],
      ['run.disqualify', 'timed its own clock'],
    ]);
    expect(audit[1].details).toMatchObject({ teamId: annTeam.id, score: 150 });
  });

  it('lists every run across teams, filtered, and searches by run or submission id', async () => {
    expect((await ann.get('/api/admin/runs')).status).toBe(403);
    const all = await organizer.get('/api/admin/runs');
    expect(all.status).toBe(200);
    expect(new Set(all.body.items.map((r: { teamSlug: string }) => r.teamSlug))).toEqual(
      new Set([annTeam.slug, bobTeam.slug]),
    );
    expect(all.body.items[0]).toEqual(
      expect.objectContaining({
        teamName: expect.any(String),
        submissionSha256: expect.stringMatching(/^[0-9a-f]{64}$/),
      }),
    );
    const bobs = await organizer.get(
      `/api/admin/runs?team=${bobTeam.slug}&status=succeeded&benchmark=toy-decode`,
    );
    expect(bobs.body.items.map((r: { id: string }) => r.id)).toEqual([runs.bob1]);
    const queued = await organizer.get('/api/admin/runs?status=queued');
    expect(queued.body.items.every((r: { status: string; mode: string }) => r.status === 'queued')).toBe(
      true,
    );
    expect(queued.body.items).toHaveLength(1);

    // A failed run, found by its failure code.
    const fail = (await bob.post(`/api/submissions/${subs.bob1}/runs`, { mode: 'public' })).body.run;
    await agent.claim(fail.id);
    await agent.finish(fail.id, {
      status: 'failed',
      failureCode: 'incorrect_output',
      message: 'token 3 differs',
    });
    const failed = await organizer.get('/api/admin/runs?failureCode=incorrect_output');
    expect(failed.body.items.map((r: { id: string }) => r.id)).toEqual([fail.id]);

    const byRun = await organizer.get(`/api/admin/runs?q=${runs.ann1}`);
    expect(byRun.body.items.map((r: { id: string }) => r.id)).toEqual([runs.ann1]);
    const bySub = await organizer.get(`/api/admin/runs?q=${subs.bob1}`);
    expect(bySub.body.items.map((r: { id: string }) => r.id).sort()).toEqual([runs.bob1, fail.id].sort());
    const future = new Date(Date.now() + 3600_000).toISOString();
    expect((await organizer.get(`/api/admin/runs?since=${future}`)).body.items).toEqual([]);
    expect((await organizer.get(`/api/admin/runs?until=${future}&limit=2`)).body.items).toHaveLength(2);
    const paged = await organizer.get('/api/admin/runs?limit=2');
    const next = await organizer.get(`/api/admin/runs?limit=2&cursor=${paged.body.nextCursor}`);
    expect(next.body.items[0].id).not.toBe(paged.body.items[1].id);

    for (const [query, pattern] of [
      ['status=done', /status/],
      ['failureCode=slow', /failureCode/],
      ['q=abc', /q: a run id or a submission id/],
      ['since=yesterday', /since/],
      ['limit=0', /limit/],
      ['colour=red', /colour/],
    ] as const) {
      const bad = await organizer.get(`/api/admin/runs?${query}`);
      expect(bad.status, query).toBe(400);
      expect(bad.body.error.message).toMatch(pattern);
    }
    expect((await organizer.get('/api/admin/runs?team=nobody')).body.error.code).toBe('team_not_found');
    expect((await organizer.get('/api/admin/runs?benchmark=nope')).body.error.code).toBe(
      'benchmark_not_found',
    );
  });

  it("reads any team's run page, logs and live room as an organizer; participants still see only their own", async () => {
    const run = await organizer.get(`/api/runs/${runs.bob1}`);
    expect(run.status).toBe(200);
    const logs = await organizer.get(`/api/runs/${runs.bob1}/logs`);
    expect(logs.body.items.map((l: { text: string }) => l.text)).toEqual(['loading engine', 'measuring']);
    expect((await organizer.get(`/api/runs/${runs.bob1}/result`)).body.score).toBe(130);
    expect((await ann.get(`/api/runs/${runs.bob1}`)).status).toBe(404);
    const socket = await connect(hub.baseUrl, organizer.cookie);
    const joined = await socket.emitWithAck('run.join', { runId: runs.bob1, afterSeq: 0 });
    expect(joined.ok).toBe(true);
    socket.close();
    const stranger = await connect(hub.baseUrl, ann.cookie);
    expect((await stranger.emitWithAck('run.join', { runId: runs.bob1, afterSeq: 0 })).ok).toBe(false);
    stranger.close();
    // Reading is not acting: an organizer cannot cancel another team's run through the team route.
    expect((await organizer.post(`/api/runs/${runs.bob1}/cancel`, { reason: 'x' })).status).toBe(404);
  });

  it('exports the leaderboard and every official result as JSON and CSV, organizers only', async () => {
    expect((await ann.get('/api/admin/benchmarks/toy-decode/export')).status).toBe(403);
    await hub.dataSource.query(
      `UPDATE runs SET score_interval = '{"low": 141.25, "high": 158.5, "halfWidth": 8.625, "level": 0.95}' WHERE id = $1`,
      [runs.ann2],
    );
    const json = await organizer.get('/api/admin/benchmarks/toy-decode/export?what=results&format=json');
    expect(json.status).toBe(200);
    expect(json.body).toMatchObject({ benchmarkId: 'toy-decode', rulesVersion: 1, what: 'results' });
    expect(json.body.rows.map((r: { runId: string; rank: number | null }) => [r.runId, r.rank])).toEqual([
      [runs.ann2, 1],
      [runs.bob1, null],
      [runs.ann1, null],
    ]);
    const top = json.body.rows[0];
    expect(top).toMatchObject({
      team: 'Ann, "Fast" Co',
      teamSlug: annTeam.slug,
      members: ['org-ann', 'org-ann-mate'],
      submittedBy: 'org-ann',
      score: 150,
      submissionId: subs.ann2,
      rulesVersion: 1,
      disqualified: false,
      intervalLow: 141.25,
      intervalHigh: 158.5,
    });
    expect(top.submissionSha256).toMatch(/^[0-9a-f]{64}$/);
    expect(json.body.rows[1]).toMatchObject({
      disqualified: true,
      disqualifiedReason: 'shared code with Ann',
    });

    const lb = await organizer.get('/api/admin/benchmarks/toy-decode/export?what=leaderboard');
    expect(lb.body.rows.map((r: { rank: number; team: string }) => [r.rank, r.team])).toEqual([
      [1, 'Ann, "Fast" Co'],
    ]);

    const csv = await organizer.get('/api/admin/benchmarks/toy-decode/export?what=results&format=csv');
    expect(csv.status).toBe(200);
    expect(csv.headers['content-type']).toMatch(/^text\/csv/);
    expect(csv.headers['content-disposition']).toBe('attachment; filename="toy-decode-results-rules-v1.csv"');
    const lines = csv.text.trimEnd().split('\r\n');
    expect(lines[0]).toBe(
      'rank,team,teamSlug,members,submittedBy,score,intervalLow,intervalHigh,runId,submissionId,submissionSha256,rulesVersion,tier,finishedAt,disqualified,disqualifiedReason',
    );
    expect(lines).toHaveLength(4);
    expect(lines[1]).toBe(
      `1,"Ann, ""Fast"" Co",${annTeam.slug},org-ann;org-ann-mate,org-ann,150,141.25,158.5,${runs.ann2},${subs.ann2},${top.submissionSha256},1,,${top.finishedAt},false,`,
    );
    const bad = await organizer.get('/api/admin/benchmarks/toy-decode/export?format=xml');
    expect(bad.status).toBe(400);
    expect(bad.body.error.message).toMatch(/format/);
    expect((await organizer.get('/api/admin/benchmarks/nope/export')).body.error.code).toBe(
      'benchmark_not_found',
    );
  });

  it('sends a board change as the places that changed where that is smaller, based on the version the join gave', async () => {
    const spectator = await connect(hub.baseUrl);
    const joined = await spectator.emitWithAck('leaderboard.join', { benchmarkId: 'toy-decode' });
    let live: LeaderboardView = joined.leaderboard;
    let version: string = joined.leaderboardVersion;
    const diffs: LeaderboardDiffEvent[] = [];
    const misses: LeaderboardDiffEvent[] = [];
    spectator.on('leaderboard.update', (e: { leaderboard: LeaderboardView; version: string }) => {
      live = e.leaderboard;
      version = e.version;
    });
    spectator.on('leaderboard.diff', (d: LeaderboardDiffEvent) => {
      const next = applyLeaderboardDiff(live, version, d);
      if (!next) return void misses.push(d);
      diffs.push(d);
      live = next;
      version = d.version;
    });
    const { owner: cat } = await ownerWithTeam(hub, 'org-cat', 'Cat club');
    await official(cat, 'cat1', 100);
    await official(cat, 'cat2', 110);
    const rest = async () => (await hub.http.get('/api/leaderboards/toy-decode')).body as LeaderboardView;
    const entries = (b: LeaderboardView) => JSON.stringify(b.entries);
    for (let i = 0; i < 200 && entries(live) !== entries(await rest()); i++)
      await new Promise((r) => setTimeout(r, 25));
    const now = await rest();
    // The board built from the diffs is the one REST serves, byte for byte.
    expect(JSON.stringify(live)).toEqual(JSON.stringify(now));
    expect(misses).toEqual([]);
    expect(now.entries.map((e) => [e.name, e.score])).toEqual([
      ['Ann, "Fast" Co', 150],
      ['Cat club', 110],
    ]);
    // Only the second place changed, and only its result: the diff carries those fields alone.
    const last = diffs.at(-1)!;
    expect(last.places).toEqual([
      { rank: 2, score: 110, runId: now.entries[1].runId, achievedAt: now.entries[1].achievedAt },
    ]);
    spectator.close();
  });
  it('escapes formulas in the CSV export: a team named =1+1 is text in a spreadsheet; the JSON keeps the name as it is', async () => {
    const names = ['=1+1', '+SUM(A1)', '-2+3', '@cmd'];
    for (const [i, name] of names.entries()) {
      const { owner } = await ownerWithTeam(hub, `org-formula-${i}`, name);
      await official(owner, `formula${i}`, 10 + i);
    }
    const csv = await organizer.get('/api/admin/benchmarks/toy-decode/export?what=results&format=csv');
    expect(csv.status).toBe(200);
    const lines = csv.text.trimEnd().split('\r\n');
    const header = lines[0].split(',');
    const teamCol = header.indexOf('team');
    const scoreCol = header.indexOf('score');
    for (const [i, name] of names.entries()) {
      const line = lines.find((l) => l.includes(runs[`formula${i}`]));
      expect(line, `the CSV line of ${JSON.stringify(name)}`).toBeDefined();
      const cells = line!.split(',');
      expect(cells[teamCol]).toBe(`'${name}`);
      expect(cells[scoreCol]).toBe(String(10 + i));
    }
    // A plain team's name is untouched.
    expect(lines.find((l) => l.includes(subs.bob1))!.split(',')[teamCol]).toBe('Bobcats');

    const json = await organizer.get('/api/admin/benchmarks/toy-decode/export?what=results&format=json');
    const byName = new Map(
      (json.body.rows as { team: string; score: number }[]).map((r) => [r.team, r.score] as const),
    );
    for (const [i, name] of names.entries()) expect(byName.get(name)).toBe(10 + i);
  });
});
