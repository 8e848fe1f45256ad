import { AsyncLocalStorage } from 'node:async_hooks';
import type { IncomingMessage } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunView } from '@dryft/libs';
import { RunViews } from '../../apps/api/src/runs/run-views';
import { RunEntity } from '../../apps/api/src/runs/run.entity';
import { toyStarter } from '../support/archives';
import { startTestHub, TestHub } from '../support/hub';
import { TestAgent } from '../support/test-agent';
import { ownerWithTeam, signIn, TestUser } from '../support/users';

/**
 * The queries TypeORM sends on behalf of one piece of work: a counter is entered for it (a call, or
 * a request carrying the header below) and every query issued in its async context counts, so the
 * hub's own timers (sweeper, dispatch) running meanwhile do not.
 */
class QueryCounter {
  private readonly context = new AsyncLocalStorage<{ queries: string[] }>();

  constructor(hub: TestHub) {
    const logger = hub.dataSource.logger;
    const logQuery = logger.logQuery.bind(logger);
    logger.logQuery = (query, parameters, runner) => {
      this.context.getStore()?.queries.push(query);
      return logQuery(query, parameters, runner);
    };
    // The first listener of each request: the handlers after it (express, Nest) run in its context.
    hub.app.getHttpServer().prependListener('request', (req: IncomingMessage) => {
      if (!req.headers['x-count-queries']) return;
      this.lastRequest = [];
      this.context.enterWith({ queries: this.lastRequest });
    });
  }

  /** The queries of the last request sent with the `X-Count-Queries` header. */
  lastRequest: string[] = [];

  async of<T>(work: () => Promise<T>): Promise<{ result: T; queries: string[] }> {
    const store = { queries: [] as string[] };
    const result = await this.context.run(store, work);
    return { result, queries: store.queries };
  }
}

describe('a page of runs costs a fixed number of queries (RunViews.views)', () => {
  let hub: TestHub;
  let counter: QueryCounter;
  let owner: TestUser;
  let member: TestUser;
  const created: RunView[] = [];

  beforeAll(async () => {
    hub = await startTestHub({ env: { TEAM_QUEUED_RUNS: '100' } });
    counter = new QueryCounter(hub);
    const agent = new TestAgent(hub);
    let team: { inviteCode: string };
    ({ owner, team } = await ownerWithTeam(hub, 'views-owner', 'Views'));
    member = await signIn(hub, 'views-member');
    expect((await member.post('/api/teams/join', { code: team.inviteCode })).status).toBe(200);
    // 24 runs of two submissions by two members: succeeded, failed, canceled and (most) queued, the
    // newest queued, so that every page below holds queued runs (the waiting estimate's reads).
    const subs: string[] = [];
    for (const [user, name] of [
      [owner, 'alpha.tar.gz'],
      [member, 'beta.tar.gz'],
    ] as const) {
      const res = await user.upload(
        '/api/submissions',
        { benchmark: 'toy-decode' },
        { name, content: await toyStarter() },
      );
      expect(res.status).toBe(201);
      subs.push(res.body.submission.id);
    }
    for (let i = 0; i < 24; i++) {
      const user = i % 2 ? member : owner;
      const res = await user.post(`/api/submissions/${subs[i % 3 === 0 ? 0 : 1]}/runs`, { mode: 'public' });
      expect(res.status).toBe(201);
      created.push(res.body.run);
    }
    for (const i of [1, 6, 11, 16]) {
      await agent.claim(created[i].id);
      await agent.finish(created[i].id, { status: i === 6 ? 'failed' : 'succeeded', score: 100 + i });
    }
    await agent.claim(created[8].id); // assigned, never started
    expect((await owner.post(`/api/runs/${created[3].id}/cancel`, { reason: 'enough' })).status).toBe(200);
  });
  afterAll(async () => hub?.close());

  const rowsNewestFirst = async (n: number): Promise<RunEntity[]> =>
    hub.dataSource
      .getRepository(RunEntity)
      .find({ where: { teamId: created[0].teamId! }, order: { createdAt: 'DESC', id: 'DESC' }, take: n });

  it('answers pages of 1, 5 and 20 runs in the same few queries, each view as one run alone gets it', async () => {
    const views = hub.app.get(RunViews);
    const counts: number[] = [];
    for (const n of [1, 5, 20]) {
      const page = await rowsNewestFirst(n);
      expect(page).toHaveLength(n);
      const { result, queries } = await counter.of(() => views.views(page));
      counts.push(queries.length);
      // The batch answers what a view of each run alone answers.
      const alone: RunView[] = [];
      for (const run of page) alone.push(await views.view(run));
      expect(result).toEqual(alone);
    }
    expect(counts[0]).toBe(counts[1]);
    expect(counts[1]).toBe(counts[2]);
    // Names, queue places, and the waiting estimate's agents, durations (and busy slots, when an
    // agent is online): never one query per run.
    expect(counts[2]).toBeLessThanOrEqual(5);
    expect(await counter.of(() => views.views([])).then((x) => x.queries)).toEqual([]);
  });

  it('shows each run of a page as before: submission, creator, status, queue place and waiting', async () => {
    const page = await hub.app.get(RunViews).views(await rowsNewestFirst(24));
    const byId = new Map(page.map((v) => [v.id, v]));
    const queued = created.filter((r) => byId.get(r.id)!.status === 'queued');
    expect(queued).toHaveLength(18);
    // Places in the benchmark's queue, oldest first; a run that is not queued has none.
    queued.forEach((r, i) => expect(byId.get(r.id)).toMatchObject({ queuePosition: i + 1 }));
    for (const [i, r] of created.entries()) {
      const v = byId.get(r.id)!;
      expect(v).toMatchObject({
        submissionName: i % 3 === 0 ? 'alpha #1' : 'beta #1',
        createdBy: i % 2 ? 'views-member' : 'views-owner',
      });
      if (v.status === 'queued') expect(v.waiting).toMatchObject({ position: v.queuePosition });
      else expect(v).toMatchObject({ queuePosition: null, waiting: null });
    }
    expect(byId.get(created[6].id)!.status).toBe('failed');
    expect(byId.get(created[3].id)!.status).toBe('canceled');
    expect(byId.get(created[8].id)!.status).toBe('assigned');
  });

  it('GET /api/runs costs the same number of queries for a page of 1, 5 or 20 runs', async () => {
    const counts: number[] = [];
    await owner.get('/api/runs?limit=1').set('X-Count-Queries', '1'); // the session read once, as later
    for (const limit of [1, 5, 20]) {
      const res = await owner.get(`/api/runs?limit=${limit}`).set('X-Count-Queries', '1');
      expect(res.status).toBe(200);
      expect(res.body.items).toHaveLength(limit);
      counts.push(counter.lastRequest.length);
    }
    expect(counts[0]).toBeGreaterThan(0);
    expect(counts).toEqual([counts[0], counts[0], counts[0]]);
  });
});
