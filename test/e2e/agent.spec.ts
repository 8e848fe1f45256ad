import { afterAll, beforeAll, describe, expect, it } from 'vitest';
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
});
