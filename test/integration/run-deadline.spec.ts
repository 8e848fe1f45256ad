import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { toyStarter } from '../support/archives';
import { startTestHub, TestHub } from '../support/hub';
import { TestAgent } from '../support/test-agent';
import { ownerWithTeam, TestUser } from '../support/users';

async function until<T>(what: string, check: () => Promise<T | undefined | false>, ms = 10_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await check();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe('the whole-run time limit, enforced by the server', () => {
  let hub: TestHub;
  let owner: TestUser;
  beforeAll(async () => {
    hub = await startTestHub({ env: { AGENT_LEASE_SECONDS: '2', DEADLINE_GRACE_SECONDS: '0' } });
    ({ owner } = await ownerWithTeam(hub, 'deadline-owner'));
  });
  afterAll(async () => hub?.close());

  it('cancels a run past its deadline with an explanation even when its agent says nothing', async () => {
    const sub = (
      await owner.upload(
        '/api/submissions',
        { benchmark: 'toy-decode' },
        { name: 'slow.tar.gz', content: await toyStarter() },
      )
    ).body.submission.id;
    const run = (await owner.post(`/api/submissions/${sub}/runs`, { mode: 'public' })).body.run;
    const silent = new TestAgent(hub, 'silent-agent');
    await silent.claim(run.id);
    await silent.log(run.id, 'started, then nothing more');
    // The agent keeps its lease (claimed for 60 s) but never finishes: only the deadline can end it.
    await hub.dataSource.query(`UPDATE runs SET deadline_at = now() - interval '1 second' WHERE id = $1`, [
      run.id,
    ]);
    const ended = await until('the run to be stopped', async () => {
      const r = (await owner.get(`/api/runs/${run.id}`)).body;
      return r.status === 'canceled' ? r : undefined;
    });
    expect(ended.message).toMatch(/whole-run time limit of 300 s/);
    expect(ended.cancelReason).toMatch(/time limit/);
    // The silent agent's late report changes nothing.
    expect((await silent.log(run.id, 'too late')).stop).toBe(true);
    await silent.finish(run.id, { status: 'succeeded', score: 500 });
    expect((await owner.get(`/api/runs/${run.id}`)).body.status).toBe('canceled');
  });
});
