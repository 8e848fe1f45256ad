import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { toyStarter } from '../support/archives';
import { ROOT, startTestHub, TestHub } from '../support/hub';
import { TestAgent } from '../support/test-agent';
import { ownerWithTeam, signIn, TestUser, withToken } from '../support/users';

describe('runs, results and leaderboards through the REST API', () => {
  let hub: TestHub;
  let agent: TestAgent;
  let alice: TestUser;
  let aliceTeam: { id: string; slug: string };
  let organizer: TestUser;

  beforeAll(async () => {
    hub = await startTestHub({ env: { ADMIN_LOGINS: 'organizer' } });
    agent = new TestAgent(hub);
    ({ owner: alice, team: aliceTeam } = await ownerWithTeam(hub, 'run-alice', 'Fast Qwen'));
    organizer = await signIn(hub, 'organizer');
  });
  afterAll(async () => hub?.close());

  async function uploadToy(user: TestUser, name = 'fast-qwen.tar.gz'): Promise<string> {
    const res = await user.upload(
      '/api/submissions',
      { benchmark: 'toy-decode' },
      { name, content: await toyStarter() },
    );
    expect(res.status).toBe(201);
    return res.body.submission.id;
  }

  it('walks a public run from queued to a result, logs page by page, and a rank answer', async () => {
    const sub = await uploadToy(alice);
    const created = await alice.post(`/api/submissions/${sub}/runs`, { mode: 'public' });
    expect(created.status).toBe(201);
    expect(created.body.run).toMatchObject({
      status: 'queued',
      mode: 'public',
      submissionName: 'fast-qwen #1',
      queuePosition: 1,
    });
    // toy-decode sets no public daily limit: the hub's own cap per team (TEAM_PUBLIC_RUNS_PER_DAY).
    expect(created.body.quota).toMatchObject({ bucket: 'public', limit: 200, used: 1, remaining: 199 });
    const runId = created.body.run.id;

    await agent.claim(runId);
    const lines = Array.from({ length: 25 }, (_, i) => `line ${i + 1}`);
    await agent.log(runId, ...lines.slice(0, 10));
    const running = await alice.get(`/api/runs/${runId}`);
    expect(running.body).toMatchObject({
      status: 'running',
      queuePosition: null,
      agentName: 'test-agent',
      lastLogSeq: 10,
    });
    await agent.log(runId, ...lines.slice(10));
    await agent.finish(runId, { status: 'succeeded', score: 101.5, message: 'All checks passed.' });

    const seen: string[] = [];
    let after = 0;
    for (let page = 0; page < 10; page++) {
      const res = await alice.get(`/api/runs/${runId}/logs?after=${after}&limit=10`);
      expect(res.status).toBe(200);
      seen.push(...res.body.items.map((l: { text: string }) => l.text));
      after = res.body.nextAfter;
      if (res.body.complete) break;
    }
    expect(seen).toEqual(lines);
    const result = await alice.get(`/api/runs/${runId}/result`);
    expect(result.body).toMatchObject({ score: 101.5, complete: true, run: { status: 'succeeded' } });
    const rank = await alice.get(`/api/runs/${runId}/rank`);
    expect(rank.body).toMatchObject({ eligible: false, rank: null });
    expect(rank.body.reason).toMatch(/Public runs give feedback/);
  });

  it('reports samples and checks in the result', async () => {
    const sub = await uploadToy(alice);
    const run = (await alice.post(`/api/submissions/${sub}/runs`, { mode: 'public' })).body.run;
    await agent.complete(run.id, 99);
    const result = await alice.get(`/api/runs/${run.id}/result`);
    expect(result.body.samples).toEqual([
      expect.objectContaining({ workload: 'b1-p16', ttftMs: 5, tpotMs: 1.5, tps: 600 }),
    ]);
    expect(result.body.checks).toEqual([{ name: 'output', passed: true, detail: 'every token matched' }]);
    expect(result.body.workloads[0]).toMatchObject({ workload: 'b1-p16', speedup: 0.99 });
  });

  it('asks for confirmation before an official run and refuses bad options by name', async () => {
    const sub = await uploadToy(alice);
    const noConfirm = await alice.post(`/api/submissions/${sub}/runs`, { mode: 'official' });
    expect(noConfirm.status).toBe(400);
    expect(noConfirm.body.error.code).toBe('confirmation_required');
    const tiers = await alice.post(`/api/submissions/${sub}/runs`, { mode: 'public', tier: 'easy' });
    expect(tiers.status).toBe(400);
    expect(tiers.body.error.code).toBe('no_tiers');
    const badMode = await alice.post(`/api/submissions/${sub}/runs`, { mode: 'fast' });
    expect(badMode.status).toBe(400);
    expect(badMode.body.error.message).toMatch(/mode/);
    const extra = await alice.post(`/api/submissions/${sub}/runs`, { mode: 'public', priority: 'high' });
    expect(extra.status).toBe(400);
  });

  it('ranks official runs: best per team, a slower run never replaces it, ties go to who got there first', async () => {
    const { owner: bob } = await ownerWithTeam(hub, 'run-bob', 'Bobcats');
    const { owner: carol } = await ownerWithTeam(hub, 'run-carol', 'Carol Co');
    const official = async (user: TestUser, score: number) => {
      const sub = await uploadToy(user);
      const run = (await user.post(`/api/submissions/${sub}/runs`, { mode: 'official', confirm: true })).body
        .run;
      await agent.complete(run.id, score);
      return run.id as string;
    };
    const a1 = await official(alice, 120);
    const b1 = await official(bob, 130);
    await official(alice, 110); // slower: stays in history, does not replace the best
    const c1 = await official(carol, 120); // ties Alice, later: ranks below her

    const board = await hub.http.get('/api/leaderboards/toy-decode');
    expect(board.status).toBe(200);
    expect(
      board.body.entries.map((e: { name: string; score: number; rank: number }) => [e.rank, e.name, e.score]),
    ).toEqual([
      [1, 'Bobcats', 130],
      [2, 'Fast Qwen', 120],
      [3, 'Carol Co', 120],
    ]);
    expect(board.body.entries[1].runId).toBe(a1);
    const rank = await alice.get(`/api/runs/${a1}/rank`);
    expect(rank.body).toMatchObject({ eligible: true, rank: 2, isBest: true });
    const carolRank = await carol.get(`/api/runs/${c1}/rank`);
    expect(carolRank.body.rank).toBe(3);
    expect((await bob.get(`/api/runs/${b1}/rank`)).body.rank).toBe(1);

    const page = await hub.http.get(`/api/public/teams/${aliceTeam.slug}`);
    expect(page.status).toBe(200);
    expect(page.body.members.map((m: { login: string }) => m.login)).toEqual(['run-alice']);
    expect(page.body.history.map((h: { score: number }) => h.score)).toEqual([120]);
    expect(page.body.places).toEqual([{ benchmarkId: 'toy-decode', rank: 2, score: 120 }]);
    expect(page.body).not.toHaveProperty('submissions');
  });

  it('hides a team page while the team holds no place', async () => {
    const { team } = await ownerWithTeam(hub, 'run-dave', 'Nobody Yet');
    const res = await hub.http.get(`/api/public/teams/${team.slug}`);
    expect(res.status).toBe(404);
  });

  it('keeps runs private to their team', async () => {
    const sub = await uploadToy(alice);
    const run = (await alice.post(`/api/submissions/${sub}/runs`, { mode: 'public' })).body.run;
    const { owner: eve } = await ownerWithTeam(hub, 'run-eve');
    for (const p of [
      `/api/runs/${run.id}`,
      `/api/runs/${run.id}/logs`,
      `/api/runs/${run.id}/result`,
      `/api/runs/${run.id}/rank`,
    ]) {
      const res = await eve.get(p);
      expect(res.status, p).toBe(404);
      expect(res.body.error.code).toBe('run_not_found');
    }
    expect((await eve.post(`/api/runs/${run.id}/cancel`, { reason: 'x' })).status).toBe(404);
    expect((await eve.post(`/api/submissions/${sub}/runs`, { mode: 'public' })).status).toBe(404);
  });

  it('cancels idempotently, and a finished run is a no-op that says so', async () => {
    const sub = await uploadToy(alice);
    const queued = (await alice.post(`/api/submissions/${sub}/runs`, { mode: 'public' })).body.run;
    const noReason = await alice.post(`/api/runs/${queued.id}/cancel`, {});
    expect(noReason.status).toBe(400);
    const first = await alice.post(`/api/runs/${queued.id}/cancel`, { reason: 'superseded' });
    expect(first.body).toMatchObject({
      changed: true,
      run: { status: 'canceled', cancelReason: 'superseded' },
    });
    const second = await alice.post(`/api/runs/${queued.id}/cancel`, { reason: 'again' });
    expect(second.body.changed).toBe(false);
    expect(second.body.message).toMatch(/already canceled/);

    const running = (await alice.post(`/api/submissions/${sub}/runs`, { mode: 'public' })).body.run;
    await agent.claim(running.id);
    await agent.log(running.id, 'working');
    const stop = await alice.post(`/api/runs/${running.id}/cancel`, { reason: 'wrong engine' });
    expect(stop.body.run.status).toBe('canceled');
    // The agent's late verdict does not resurrect it; its next batch is told to stop.
    expect((await agent.log(running.id, 'still here')).stop).toBe(true);
    await agent.finish(running.id, { status: 'succeeded', score: 300 });
    expect((await alice.get(`/api/runs/${running.id}`)).body.status).toBe('canceled');

    const done = (await alice.post(`/api/submissions/${sub}/runs`, { mode: 'public' })).body.run;
    await agent.complete(done.id, 100);
    const late = await alice.post(`/api/runs/${done.id}/cancel`, { reason: 'late' });
    expect(late.body).toMatchObject({ changed: false, run: { status: 'succeeded' } });
    expect(late.body.message).toMatch(/already succeeded/);
  });

  it('stores each batch once: a resend is acked, a gap is refused with the stored seq', async () => {
    const sub = await uploadToy(alice);
    const run = (await alice.post(`/api/submissions/${sub}/runs`, { mode: 'public' })).body.run;
    await agent.claim(run.id);
    const { RunLifecycleService } = await import('../../apps/api/src/runs/run-lifecycle.service');
    const lifecycle = hub.app.get(RunLifecycleService);
    const batch = {
      runId: run.id,
      seq: 1,
      entries: [{ type: 'log' as const, n: 1, ts: Date.now(), stream: 'out' as const, text: 'once' }],
    };
    expect(await lifecycle.storeBatch(run.id, agent.id, batch)).toEqual({ ok: true, ackedSeq: 1 });
    expect(await lifecycle.storeBatch(run.id, agent.id, batch)).toEqual({ ok: true, ackedSeq: 1 });
    const gap = await lifecycle.storeBatch(run.id, agent.id, { ...batch, seq: 3 });
    expect(gap).toMatchObject({ ok: false, ackedSeq: 1, error: { code: 'batch_out_of_order' } });
    const other = await lifecycle.storeBatch(run.id, '00000000-0000-0000-0000-000000000000', {
      ...batch,
      seq: 2,
    });
    expect(other).toMatchObject({ ok: false, stop: true, error: { code: 'run_not_assigned' } });
    const logs = await alice.get(`/api/runs/${run.id}/logs`);
    expect(logs.body.items.map((l: { text: string }) => l.text)).toEqual(['once']);
  });

  it('stores the next few lines in one statement; a run row changed behind this process takes the locked path', async () => {
    const sub = await uploadToy(alice);
    const run = (await alice.post(`/api/submissions/${sub}/runs`, { mode: 'public' })).body.run;
    await agent.claim(run.id);
    const { RunLifecycleService } = await import('../../apps/api/src/runs/run-lifecycle.service');
    const { RunLogRepository } = await import('../../apps/api/src/runs/run-log.repository');
    const { DataSource } = await import('typeorm');
    const lifecycle = hub.app.get(RunLifecycleService);
    const logStore = hub.app.get(RunLogRepository);
    const db = hub.app.get(DataSource);
    // What each one-statement store answered: true stored, false the row had moved on.
    const statements: boolean[] = [];
    const recordHeadBatch = logStore.recordHeadBatch.bind(logStore);
    logStore.recordHeadBatch = async (...args) => {
      const claimed = await recordHeadBatch(...args);
      statements.push(claimed);
      return claimed;
    };
    const batch = (seq: number, first: number, texts: string[]) =>
      lifecycle.storeBatch(run.id, agent.id, {
        runId: run.id,
        seq,
        entries: texts.map((text, i) => ({
          type: 'log' as const,
          n: first + i,
          ts: 1,
          stream: 'out' as const,
          text,
        })),
      });
    try {
      // The first batch (assigned → running) takes the locked path; the next ones one statement each.
      expect(await batch(1, 1, ['one', 'two'])).toEqual({ ok: true, ackedSeq: 1 });
      expect(await batch(2, 3, ['three', 'four'])).toEqual({ ok: true, ackedSeq: 2 });
      expect(await batch(3, 5, ['five'])).toEqual({ ok: true, ackedSeq: 3 });
      expect(statements).toEqual([true, true]);
      // Another replica stores batch 4 (lines 6 and 7) behind this process's back.
      await db.query(
        `INSERT INTO run_log_chunks (run_id, first_seq, last_seq, line_count, lines) VALUES ($1, 6, 7, 2, $2)`,
        [
          run.id,
          JSON.stringify([
            [6, 1, 'out', 'six'],
            [7, 1, 'out', 'seven'],
          ]),
        ],
      );
      await db.query(
        'UPDATE runs SET last_batch_seq = 4, last_log_seq = 7, log_lines = 7, log_bytes = log_bytes + 8 WHERE id = $1',
        [run.id],
      );
      // This process's batch 4 finds the row moved on: a resend, acked and not stored again.
      expect(await batch(4, 6, ['SIX', 'SEVEN'])).toEqual({ ok: true, ackedSeq: 4 });
      expect(statements).toEqual([true, true, false]);
      expect(await batch(5, 8, ['eight'])).toEqual({ ok: true, ackedSeq: 5 });
      expect(await batch(6, 9, ['nine'])).toEqual({ ok: true, ackedSeq: 6 });
      expect(statements).toEqual([true, true, false, true]);
      // Canceled meanwhile: the statement stores nothing and the agent is told to stop.
      expect((await alice.post(`/api/runs/${run.id}/cancel`, { reason: 'enough' })).body.changed).toBe(true);
      expect(await batch(7, 10, ['ten'])).toEqual({ ok: true, ackedSeq: 6, stop: true });
      expect(statements).toEqual([true, true, false, true, false]);
    } finally {
      logStore.recordHeadBatch = recordHeadBatch;
    }
    const logs = await alice.get(`/api/runs/${run.id}/logs`);
    expect(logs.body.items.map((l: { text: string }) => l.text)).toEqual([
      'one',
      'two',
      'three',
      'four',
      'five',
      'six',
      'seven',
      'eight',
      'nine',
    ]);
    const [row] = await db.query(
      'SELECT last_log_seq, log_lines, log_bytes::int AS bytes FROM runs WHERE id = $1',
      [run.id],
    );
    expect(row).toEqual({
      last_log_seq: 9,
      log_lines: 9,
      bytes: 'onetwothreefourfivesixseveneightnine'.length,
    });
  });

  describe('Idempotency-Key', () => {
    it('answers a retry with the first response and starts no second run', async () => {
      const sub = await uploadToy(alice);
      const key = 'key-retry-1';
      const first = await alice
        .post(`/api/submissions/${sub}/runs`, { mode: 'public' })
        .set('Idempotency-Key', key);
      const again = await alice
        .post(`/api/submissions/${sub}/runs`, { mode: 'public' })
        .set('Idempotency-Key', key);
      expect(first.status).toBe(201);
      expect(again.status).toBe(201);
      expect(again.headers['idempotent-replayed']).toBe('true');
      expect(again.body.run.id).toBe(first.body.run.id);
      const runs = await alice.get(`/api/runs?submission=${sub}`);
      expect(runs.body.items).toHaveLength(1);
    });

    it('refuses the same key with another body (422)', async () => {
      const sub = await uploadToy(alice);
      await alice
        .post(`/api/submissions/${sub}/runs`, { mode: 'public' })
        .set('Idempotency-Key', 'key-reuse');
      const other = await alice
        .post(`/api/submissions/${sub}/runs`, { mode: 'official', confirm: true })
        .set('Idempotency-Key', 'key-reuse');
      expect(other.status).toBe(422);
      expect(other.body.error.code).toBe('idempotency_key_reused');
    });

    it('lets two concurrent requests with one key start exactly one run', async () => {
      const sub = await uploadToy(alice);
      const send = () =>
        alice
          .post(`/api/submissions/${sub}/runs`, { mode: 'public' })
          .set('Idempotency-Key', 'key-race')
          .then((r) => r);
      const results = await Promise.all([send(), send(), send(), send()]);
      const statuses = results.map((r) => r.status).sort();
      expect(statuses.every((s) => s === 201 || s === 409)).toBe(true);
      expect(statuses).toContain(201);
      for (const r of results.filter((r) => r.status === 409))
        expect(r.body.error.code).toBe('idempotency_in_flight');
      const ids = new Set(results.filter((r) => r.status === 201).map((r) => r.body.run.id));
      expect(ids.size).toBe(1);
      const runs = await alice.get(`/api/runs?submission=${sub}`);
      expect(runs.body.items).toHaveLength(1);
    });

    it('scopes keys to the team and leaves no trace of a refused request', async () => {
      const { owner: frank } = await ownerWithTeam(hub, 'run-frank');
      const mine = await uploadToy(alice);
      const his = await uploadToy(frank);
      const a = await alice
        .post(`/api/submissions/${mine}/runs`, { mode: 'public' })
        .set('Idempotency-Key', 'shared-key');
      const b = await frank
        .post(`/api/submissions/${his}/runs`, { mode: 'public' })
        .set('Idempotency-Key', 'shared-key');
      expect(a.status).toBe(201);
      expect(b.status).toBe(201);
      expect(b.body.run.id).not.toBe(a.body.run.id);
      const refused = await alice
        .post(`/api/submissions/${mine}/runs`, { mode: 'official' })
        .set('Idempotency-Key', 'fix-me');
      expect(refused.status).toBe(400);
      const fixed = await alice
        .post(`/api/submissions/${mine}/runs`, { mode: 'official', confirm: true })
        .set('Idempotency-Key', 'fix-me');
      expect(fixed.status).toBe(201);
    });
  });

  describe('daily limits, tiers and datasets (deep-recurrence)', () => {
    let gina: TestUser;
    let sub: string;
    beforeAll(async () => {
      ({ owner: gina } = await ownerWithTeam(hub, 'run-gina'));
      const res = await gina.upload(
        '/api/submissions',
        { benchmark: 'deep-recurrence' },
        {
          name: 'submission.py',
          content: readFileSync(path.join(ROOT, 'starters/deep-recurrence/submission.py')),
        },
      );
      sub = res.body.submission.id;
    });

    it('needs a tier, and a dataset on practice tiers, naming the choices', async () => {
      const noTier = await gina.post(`/api/submissions/${sub}/runs`, { mode: 'public' });
      expect(noTier.body.error).toMatchObject({ code: 'tier_required' });
      expect(noTier.body.error.message).toMatch(/easy, medium, hard/);
      const noDataset = await gina.post(`/api/submissions/${sub}/runs`, { mode: 'public', tier: 'easy' });
      expect(noDataset.body.error.code).toBe('dataset_required');
      expect(noDataset.body.error.message).toMatch(/square/);
      const unknown = await gina.post(`/api/submissions/${sub}/runs`, {
        mode: 'public',
        tier: 'easy',
        dataset: 'nope',
      });
      expect(unknown.body.error.code).toBe('unknown_dataset');
      const hardWithDataset = await gina.post(`/api/submissions/${sub}/runs`, {
        mode: 'official',
        confirm: true,
        tier: 'hard',
        dataset: 'square',
      });
      expect(hardWithDataset.body.error.code).toBe('dataset_not_allowed');
      const hardPublic = await gina.post(`/api/submissions/${sub}/runs`, { mode: 'public', tier: 'hard' });
      expect(hardPublic.body.error.code).toBe('ranked_tier_is_official');
    });

    it('counts accepted runs that fail, refunds infrastructure failures, and answers 429 when spent', async () => {
      const first = await gina.post(`/api/submissions/${sub}/runs`, {
        mode: 'official',
        confirm: true,
        tier: 'hard',
      });
      expect(first.status).toBe(201);
      expect(first.body.quota).toMatchObject({ bucket: 'hard', limit: 1, used: 1, remaining: 0 });
      const spent = await gina.post(`/api/submissions/${sub}/runs`, {
        mode: 'official',
        confirm: true,
        tier: 'hard',
      });
      expect(spent.status).toBe(429);
      expect(spent.body.error.code).toBe('daily_limit_reached');
      expect(spent.body.error.message).toMatch(/resets at/);

      // An infra failure is refunded: the participant may run again today.
      await agent.claim(first.body.run.id);
      await agent.finish(first.body.run.id, {
        status: 'failed',
        failureCode: 'infra_error',
        message: 'GPU fell off the bus',
      });
      const retry = await gina.post(`/api/submissions/${sub}/runs`, {
        mode: 'official',
        confirm: true,
        tier: 'hard',
      });
      expect(retry.status).toBe(201);
      // A failure of the engine's own counts.
      await agent.claim(retry.body.run.id);
      await agent.finish(retry.body.run.id, {
        status: 'failed',
        failureCode: 'candidate_error',
        message: 'boom',
      });
      const quota = await gina.get('/api/quota?benchmark=deep-recurrence');
      expect(quota.body.find((q: { bucket: string }) => q.bucket === 'hard')).toMatchObject({
        used: 1,
        remaining: 0,
      });
      expect(quota.body.find((q: { bucket: string }) => q.bucket === 'easy')).toMatchObject({
        limit: 60,
        used: 0,
      });
      expect(
        (await gina.post(`/api/submissions/${sub}/runs`, { mode: 'official', confirm: true, tier: 'hard' }))
          .status,
      ).toBe(429);
    });

    it('ranks participants, not teams, on the ranked tier only', async () => {
      const easy = await gina.post(`/api/submissions/${sub}/runs`, {
        mode: 'public',
        tier: 'easy',
        dataset: 'square',
      });
      expect(easy.status).toBe(201);
      expect(easy.body.run).toMatchObject({ tier: 'easy', dataset: 'square' });
      const { owner: hank } = await ownerWithTeam(hub, 'run-hank');
      const hsub = (
        await hank.upload(
          '/api/submissions',
          { benchmark: 'deep-recurrence' },
          {
            name: 'submission.py',
            content: readFileSync(path.join(ROOT, 'starters/deep-recurrence/submission.py')),
          },
        )
      ).body.submission.id;
      const hard = await hank.post(`/api/submissions/${hsub}/runs`, {
        mode: 'official',
        confirm: true,
        tier: 'hard',
      });
      await agent.complete(hard.body.run.id, 87.5);
      const board = await hub.http.get('/api/leaderboards/deep-recurrence');
      expect(board.body.ranks).toBe('users');
      expect(board.body.entries).toEqual([
        expect.objectContaining({
          rank: 1,
          name: 'run-hank',
          userLogin: 'run-hank',
          teamSlug: null,
          score: 87.5,
        }),
      ]);
    });
  });

  describe('organizer controls', () => {
    it('are refused to participants and to API tokens', async () => {
      const token = (await alice.post(`/api/teams/${aliceTeam.id}/tokens`, { name: 't' })).body.token;
      expect((await alice.patch('/api/admin/benchmarks/toy-decode', { evaluationsOpen: false })).status).toBe(
        403,
      );
      const viaToken = await withToken(hub, token).post('/api/admin/benchmarks/toy-decode/rules-version', {
        reason: 'x',
        confirm: true,
      });
      expect(viaToken.status).toBe(403);
    });

    it('close and reopen evaluations', async () => {
      const sub = await uploadToy(alice);
      const closed = await organizer.patch('/api/admin/benchmarks/toy-decode', {
        evaluationsOpen: false,
        announcement: 'Back at 18:00 UTC',
      });
      expect(closed.status).toBe(200);
      expect(closed.body).toMatchObject({ evaluationsOpen: false, announcement: 'Back at 18:00 UTC' });
      const refused = await alice.post(`/api/submissions/${sub}/runs`, { mode: 'public' });
      expect(refused.status).toBe(403);
      expect(refused.body.error.code).toBe('evaluations_closed');
      await organizer.patch('/api/admin/benchmarks/toy-decode', { evaluationsOpen: true });
      expect((await alice.post(`/api/submissions/${sub}/runs`, { mode: 'public' })).status).toBe(201);
      const empty = await organizer.patch('/api/admin/benchmarks/toy-decode', {});
      expect(empty.status).toBe(400);
    });

    it('change the whole-run time limit of runs already in progress', async () => {
      const sub = await uploadToy(alice);
      const run = (await alice.post(`/api/submissions/${sub}/runs`, { mode: 'public' })).body.run;
      await agent.claim(run.id);
      const before = (await alice.get(`/api/runs/${run.id}`)).body;
      await organizer.patch('/api/admin/benchmarks/toy-decode', { runTimeLimitSeconds: 900 });
      await new Promise((r) => setTimeout(r, 200));
      const after = (await alice.get(`/api/runs/${run.id}`)).body;
      expect(new Date(after.deadlineAt).getTime() - new Date(after.assignedAt).getTime()).toBe(900_000);
      expect(after.deadlineAt).not.toBe(before.deadlineAt);
      await organizer.patch('/api/admin/benchmarks/toy-decode', { runTimeLimitSeconds: 300 });
    });

    it('bump the rules version: earlier results are invalidated and the board is rebuilt', async () => {
      const noConfirm = await organizer.post('/api/admin/benchmarks/toy-decode/rules-version', {
        reason: 'new hidden workloads',
      });
      expect(noConfirm.status).toBe(400);
      expect(noConfirm.body.error.message).toMatch(/confirm/);
      const before = await hub.http.get('/api/leaderboards/toy-decode');
      expect(before.body.entries.length).toBeGreaterThan(0);
      expect((await hub.http.get('/api/benchmarks/toy-decode')).body.rulesChangedAt).toBeNull();
      const publicSub = await uploadToy(alice);
      const publicRun = (await alice.post(`/api/submissions/${publicSub}/runs`, { mode: 'public' })).body.run;
      await agent.complete(publicRun.id, 120);
      const publicBefore = await alice.get(`/api/runs/${publicRun.id}`);
      const bumped = await organizer.post('/api/admin/benchmarks/toy-decode/rules-version', {
        reason: 'new hidden workloads',
        confirm: true,
      });
      expect(bumped.body.rulesVersion).toBe(before.body.rulesVersion + 1);
      await new Promise((r) => setTimeout(r, 200));
      const after = await hub.http.get('/api/leaderboards/toy-decode');
      expect(after.body).toMatchObject({ rulesVersion: before.body.rulesVersion + 1, entries: [] });
      const old = await alice.get(
        `/api/runs/${before.body.entries.find((e: { name: string }) => e.name === 'Fast Qwen').runId}`,
      );
      expect(old.body).toMatchObject({ invalidated: true, status: 'succeeded' });
      expect(old.body.invalidatedReason).toMatch(/new hidden workloads/);
      // public runs never ranked: they are not marked invalidated
      expect(publicBefore.body.mode).toBe('public');
      expect((await alice.get(`/api/runs/${publicBefore.body.id}`)).body.invalidated).toBe(false);
      // the change, when and why, for the leaderboard and team pages to explain
      const bench = (await hub.http.get('/api/benchmarks/toy-decode')).body;
      expect(bench.rulesChangedReason).toBe('new hidden workloads');
      expect(Date.now() - Date.parse(bench.rulesChangedAt)).toBeLessThan(60_000);

      const sub = await uploadToy(alice);
      const run = (await alice.post(`/api/submissions/${sub}/runs`, { mode: 'official', confirm: true })).body
        .run;
      expect(run.rulesVersion).toBe(before.body.rulesVersion + 1);
      await agent.complete(run.id, 140);
      const rebuilt = await hub.http.get('/api/leaderboards/toy-decode');
      expect(rebuilt.body.entries.map((e: { name: string }) => e.name)).toEqual(['Fast Qwen']);
    });
  });
});
