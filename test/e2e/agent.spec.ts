import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BaselinesView, RunResultView, RunView } from '@dryft/libs';
import { HttpUser, RunWatcher, terminal, toyStarter } from '../support/agent-helpers';
import { startQuickstart, Quickstart } from '../support/quickstart';

describe('the local agent runs toy-decode for real', () => {
  let qs: Quickstart;
  beforeAll(async () => {
    qs = await startQuickstart({ env: { ADMIN_LOGINS: 'org' } });
  });
  afterAll(async () => qs?.close());

  it('runs the starter archive through the harness and a watcher gets every line in order', async () => {
    const owner = await HttpUser.signIn(qs.url, 'e2e-owner');
    await owner.createTeam();
    const submissionId = await owner.upload(await toyStarter());
    const run = await owner.startRun(submissionId, 'public');
    const watcher = new RunWatcher(qs.url, { cookie: owner.cookie });
    const ack = await watcher.join(run.id);
    expect(ack.ok).toBe(true);
    const done = await owner.waitFor(run.id, terminal, 90_000);
    expect(
      done.status,
      `${JSON.stringify(done)}\n${(await owner.allLogs(run.id)).map((l) => `${l.stream}: ${l.text}`).join('\n')}\n${qs.agent?.output()}`,
    ).toBe('succeeded');
    expect(done.score).toBeGreaterThan(0);
    expect(done.agentName).toBe('local');
    const stored = await owner.allLogs(run.id);
    expect(stored.length).toBeGreaterThan(3);
    await new Promise((r) => setTimeout(r, 300));
    watcher.assertContiguous();
    expect(watcher.lines.map((l) => l.seq)).toEqual(stored.map((l) => l.seq));
    expect(watcher.lines.map((l) => l.text)).toEqual(stored.map((l) => l.text));
    expect(stored.some((l) => l.stream === 'harness')).toBe(true);
    expect(watcher.statuses.at(-1)?.status).toBe('succeeded');
    const result = (await owner.get(`/api/runs/${run.id}/result`)).body;
    expect(result.samples.length).toBeGreaterThan(0);
    expect(qs.agent!.output()).toContain('sandboxed');
    watcher.close();
  });

  it('an organizer’s baseline re-measure runs the baseline engine alone and writes the cache public runs use', async () => {
    const org = await HttpUser.signIn(qs.url, 'org');
    const queued = await org.post('/api/admin/benchmarks/toy-decode/baselines/remeasure', {
      samples: 10,
      reason: 'e2e: re-measure on the local agent',
    });
    expect(queued.status, JSON.stringify(queued.body)).toBe(201);
    const run = queued.body.run as RunView;
    expect(run).toMatchObject({ mode: 'baseline', submissionId: null, teamId: null });
    const done = await org.waitFor(run.id, terminal, 120_000);
    const logs = (await org.allLogs(run.id)).map((l) => `${l.stream}: ${l.text}`);
    expect(done.status, `${JSON.stringify(done)}\n${logs.join('\n')}\n${qs.agent?.output()}`).toBe(
      'succeeded',
    );
    expect(done.score).toBeNull();
    expect(logs.some((l) => l.includes('no submission to fetch'))).toBe(true);
    expect(logs.some((l) => /baseline short sample 9:/.test(l))).toBe(true);
    expect(logs.some((l) => l.includes('candidate'))).toBe(false);
    const result = (await org.get<RunResultView>(`/api/runs/${run.id}/result`)).body;
    expect(result.workloads.map((w) => [w.workload, w.samples])).toEqual([
      ['short', 10],
      ['long', 10],
      ['h-wide', 10],
      ['h-deep', 10],
    ]);
    const view = (await org.get<BaselinesView>('/api/admin/benchmarks/toy-decode/baselines')).body;
    const cpu = view.cached.find((c) => c.hardware === 'cpu' && c.rulesVersion === view.rulesVersion);
    expect(Object.keys(cpu?.workloads ?? {}).sort()).toEqual(['h-deep', 'h-wide', 'long', 'short']);
    expect(view.remeasures[0]).toMatchObject({
      runId: run.id,
      status: 'succeeded',
      samples: 10,
      agentName: 'local',
    });

    // A public run now scores against the re-measured cache: it does not measure the baseline itself.
    const owner = await HttpUser.signIn(qs.url, 'e2e-owner');
    const pub = await owner.startRun(await owner.upload(await toyStarter()), 'public');
    const pubDone = await owner.waitFor(pub.id, terminal, 90_000);
    expect(pubDone.status).toBe('succeeded');
    const pubLogs = (await owner.allLogs(pub.id)).map((l) => l.text);
    expect(pubLogs.some((l) => l.includes('no cached baseline'))).toBe(false);
    const after = (await org.get<BaselinesView>('/api/admin/benchmarks/toy-decode/baselines')).body;
    expect(after.cached.find((c) => c.hardware === 'cpu')?.measuredAt).toBe(cpu?.measuredAt);
  });
});
