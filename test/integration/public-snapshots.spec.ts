import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LeaderboardView, PublicBenchmark, TeamPageView } from '@dryft/libs';
import { toyStarter } from '../support/archives';
import { startTestHub, TestHub } from '../support/hub';
import { TestAgent } from '../support/test-agent';
import { ownerWithTeam, signIn, TestUser } from '../support/users';

/**
 * The public reads (boards, benchmark definitions, team pages) come from in-memory snapshots with a
 * ETag (weak for a board). Each test reads first (so the snapshot is built and cached), changes the data, and
 * reads again at once: the change event must have dropped the snapshot, with no wait in between.
 */
describe('public reads from memory: ETag, 304, and no stale read after a change', () => {
  let hub: TestHub;
  let agent: TestAgent;
  let organizer: TestUser;
  let ann: TestUser;
  let annTeam: { id: string; slug: string; inviteCode: string };
  let bob: TestUser;
  let bobTeam: { id: string; slug: string };

  const official = async (user: TestUser, score: number): Promise<string> => {
    const up = await user.upload(
      '/api/submissions',
      { benchmark: 'toy-decode' },
      { name: 'engine.tar.gz', content: await toyStarter() },
    );
    const run = (
      await user.post(`/api/submissions/${up.body.submission.id}/runs`, { mode: 'official', confirm: true })
    ).body.run;
    await agent.complete(run.id, score);
    return run.id;
  };
  const board = async () => {
    const res = await hub.http.get('/api/leaderboards/toy-decode');
    expect(res.status).toBe(200);
    return { etag: res.headers.etag as string, view: res.body as LeaderboardView };
  };
  const scores = (v: LeaderboardView) => v.entries.map((e) => [e.name, e.score]);

  beforeAll(async () => {
    hub = await startTestHub({ env: { ADMIN_LOGINS: 'snap-boss' } });
    agent = new TestAgent(hub);
    organizer = await signIn(hub, 'snap-boss');
    ({ owner: ann, team: annTeam } = await ownerWithTeam(hub, 'snap-ann', 'Ann Snap'));
    ({ owner: bob, team: bobTeam } = await ownerWithTeam(hub, 'snap-bob', 'Bob Snap'));
    await official(ann, 120);
  });
  afterAll(async () => hub?.close());

  it('every public read carries an ETag (weak for a board) and Cache-Control, and answers 304 to If-None-Match', async () => {
    for (const path of [
      '/api/leaderboards/toy-decode',
      '/api/benchmarks',
      '/api/benchmarks/toy-decode',
      `/api/public/teams/${annTeam.slug}`,
    ]) {
      // the first read builds the snapshot (full route), the second is served from memory
      const first = await hub.http.get(path);
      const second = await hub.http.get(path);
      for (const res of [first, second]) {
        expect(res.status, path).toBe(200);
        expect(res.headers['content-type']).toMatch(/^application\/json/);
        expect(res.headers['cache-control']).toBe('public, max-age=10');
        // a board is weak over its content without the instant it was built (the same on every
        // replica); the other pages strong over their bytes
        expect(res.headers.etag).toMatch(
          path.startsWith('/api/leaderboards/') ? /^W\/"[A-Za-z0-9_-]{27}"$/ : /^"[A-Za-z0-9_-]{27}"$/,
        );
      }
      expect(second.headers.etag).toBe(first.headers.etag);
      expect(second.text).toBe(first.text);
      const etag = first.headers.etag as string;
      const same = await hub.http.get(path).set('If-None-Match', etag);
      expect(same.status, path).toBe(304);
      expect(same.text ?? '').toBe('');
      expect(same.headers.etag).toBe(etag);
      expect(same.headers['cache-control']).toBe('public, max-age=10');
      // a list, a weak form of the same tag, and `*` all match; another tag does not
      const weak = `W/${etag.replace(/^W\//, '')}`;
      expect((await hub.http.get(path).set('If-None-Match', `"x", ${weak}`)).status).toBe(304);
      expect((await hub.http.get(path).set('If-None-Match', '*')).status).toBe(304);
      const other = await hub.http.get(path).set('If-None-Match', '"not-this-one"');
      expect(other.status).toBe(200);
      expect(other.text).toBe(first.text);
      // HEAD: the headers without the body
      const head = await hub.http.head(path);
      expect(head.status).toBe(200);
      expect(head.headers.etag).toBe(etag);
    }
    // a percent-encoded path takes the full route and gets the same snapshot
    const encoded = await hub.http.get('/api/leaderboards/toy%2Ddecode');
    expect(encoded.status).toBe(200);
    expect(encoded.headers.etag).toBe((await board()).etag);
  });

  it('unknown boards, benchmarks and team pages are refused as before, never cached', async () => {
    for (let i = 0; i < 2; i++) {
      const b = await hub.http.get('/api/leaderboards/no-such-bench');
      expect(b.status).toBe(404);
      expect(b.body.error.code).toBe('benchmark_not_found');
      expect(b.headers['cache-control']).toBeUndefined();
      const d = await hub.http.get('/api/benchmarks/no-such-bench');
      expect(d.status).toBe(404);
      expect(d.body.error.code).toBe('benchmark_not_found');
      const t = await hub.http.get(`/api/public/teams/${bobTeam.slug}`);
      expect(t.status).toBe(404);
      expect(t.body.error.code).toBe('team_page_not_found');
    }
    // Bob's team has no place yet; once it has one its page is public at once
    await official(bob, 110);
    const t = await hub.http.get(`/api/public/teams/${bobTeam.slug}`);
    expect(t.status).toBe(200);
    expect((t.body as TeamPageView).places).toEqual([{ benchmarkId: 'toy-decode', rank: 2, score: 110 }]);
  });

  it('a new best official result is on the board (and the team page) on the very next read', async () => {
    const before = await board();
    const page = await hub.http.get(`/api/public/teams/${bobTeam.slug}`);
    expect(scores(before.view)).toEqual([
      ['Ann Snap', 120],
      ['Bob Snap', 110],
    ]);
    const runId = await official(bob, 150);
    const after = await board();
    expect(scores(after.view)).toEqual([
      ['Bob Snap', 150],
      ['Ann Snap', 120],
    ]);
    expect(after.view.entries[0].runId).toBe(runId);
    expect(after.etag).not.toBe(before.etag);
    const stale = await hub.http.get('/api/leaderboards/toy-decode').set('If-None-Match', before.etag);
    expect(stale.status).toBe(200);
    const newPage = await hub.http
      .get(`/api/public/teams/${bobTeam.slug}`)
      .set('If-None-Match', page.headers.etag);
    expect(newPage.status).toBe(200);
    expect((newPage.body as TeamPageView).places).toEqual([
      { benchmarkId: 'toy-decode', rank: 1, score: 150 },
    ]);
  });

  it('a disqualification leaves the board and shows on the team page on the very next read', async () => {
    const before = await board();
    await hub.http.get(`/api/public/teams/${bobTeam.slug}`);
    const best = before.view.entries[0];
    const dq = await organizer.post(`/api/admin/runs/${best.runId}/disqualify`, {
      reason: 'copied a kernel',
    });
    expect(dq.status).toBe(200);
    const after = await board();
    expect(scores(after.view)).toEqual([
      ['Ann Snap', 120],
      ['Bob Snap', 110],
    ]);
    const page = (await hub.http.get(`/api/public/teams/${bobTeam.slug}`)).body as TeamPageView;
    expect(page.disqualified.map((d) => [d.runId, d.reason])).toEqual([[best.runId, 'copied a kernel']]);
  });

  it('a settings change and a team member joining show on the very next read', async () => {
    const before = (await hub.http.get('/api/benchmarks/toy-decode')).body as PublicBenchmark;
    await hub.http.get('/api/benchmarks');
    expect(before.announcement).toBeNull();
    const patched = await organizer.patch('/api/admin/benchmarks/toy-decode', {
      announcement: 'Deadline at noon',
    });
    expect(patched.status).toBe(200);
    expect(((await hub.http.get('/api/benchmarks/toy-decode')).body as PublicBenchmark).announcement).toBe(
      'Deadline at noon',
    );
    const list = (await hub.http.get('/api/benchmarks')).body as PublicBenchmark[];
    expect(list.find((b) => b.id === 'toy-decode')!.announcement).toBe('Deadline at noon');

    const members = async () =>
      ((await hub.http.get(`/api/public/teams/${annTeam.slug}`)).body as TeamPageView).members.map(
        (m) => m.login,
      );
    expect(await members()).toEqual(['snap-ann']);
    const mate = await signIn(hub, 'snap-ann-mate');
    expect((await mate.post('/api/teams/join', { code: annTeam.inviteCode })).status).toBe(200);
    expect((await members()).sort()).toEqual(['snap-ann', 'snap-ann-mate']);
  });

  it('a rules bump empties the board and changes the definition on the very next read', async () => {
    const before = await board();
    expect(before.view.entries.length).toBe(2);
    const def = (await hub.http.get('/api/benchmarks/toy-decode')).body as PublicBenchmark;
    const bumped = await organizer.post('/api/admin/benchmarks/toy-decode/rules-version', {
      reason: 'new hidden workloads',
      confirm: true,
    });
    expect(bumped.status).toBe(200);
    const after = await board();
    expect(after.view).toMatchObject({ rulesVersion: before.view.rulesVersion + 1, entries: [] });
    const now = (await hub.http.get('/api/benchmarks/toy-decode')).body as PublicBenchmark;
    expect(now.rulesVersion).toBe(def.rulesVersion + 1);
    expect(now.rulesChangedReason).toBe('new hidden workloads');
    // a team without a place or a disqualification under the new rules has no public page
    expect((await hub.http.get(`/api/public/teams/${annTeam.slug}`)).status).toBe(404);
    // and a result under the new rules is on the board at once
    await official(ann, 130);
    expect(scores((await board()).view)).toEqual([['Ann Snap', 130]]);
  });
});
