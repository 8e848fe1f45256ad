import { existsSync, mkdirSync, rmSync } from 'node:fs';
import { createServer, Server } from 'node:http';
import * as path from 'node:path';
import { io } from 'socket.io-client';
import { available } from '../support/prerequisites';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { probeSandbox } from '../../apps/gpu-agent/src/sandbox';
import {
  AgentProc,
  ApiProc,
  HttpUser,
  processesWith,
  RunWatcher,
  spawnAgent,
  startApi,
  stopProc,
  terminal,
  toyEngineWith,
  until,
} from '../support/agent-helpers';
import { createTestDatabase } from '../support/db';
import { freePort, ROOT } from '../support/quickstart';

/**
 * Real processes: the API (restartable on the same database and port), real agents with short
 * leases, the real harness inside bubblewrap, watchers over socket.io. Faults are real too: SIGKILL,
 * a dropped socket, an API restart.
 */
const LEASE = 2;
const ticks = (n: number, delay: number, marker: string) => `
import time as _t
for _i in range(${n}):
    print(f"tick ${marker} {_i}", flush=True)
    _t.sleep(${delay})
`;

describe('agent faults, cancels and containment', () => {
  let db: { url: string; drop: () => Promise<void> };
  let port: number;
  let api: ApiProc;
  let dataDir: string;
  let org: HttpUser;
  let owner: HttpUser;
  let agentToken: string;
  let agentId: string;
  let agent: AgentProc | undefined;
  const sandbox = probeSandbox();
  available('bubblewrap with namespaces', sandbox.ok, `${sandbox.reason}; apt-get install bubblewrap`);
  const apiEnv = { ADMIN_LOGINS: 'org', AGENT_LEASE_SECONDS: String(LEASE), DEADLINE_GRACE_SECONDS: '1' };

  const boot = () => startApi({ dbUrl: db.url, port, dataDir, env: apiEnv });
  const newAgent = (name: string) => {
    agent = spawnAgent({
      apiUrl: api.url,
      token: agentToken,
      dir: path.join(dataDir, `agent-${name}-${Date.now()}`),
    });
    return agent;
  };
  const tickLines = async (runId: string, marker: string) =>
    (await owner.allLogs(runId))
      .filter((l) => l.text.startsWith(`tick ${marker} `))
      .map((l) => Number(l.text.split(' ')[2]));

  beforeAll(async () => {
    db = await createTestDatabase();
    port = await freePort();
    dataDir = path.join(ROOT, '.data', 'test', `agent-faults-${process.pid}-${Date.now()}`);
    mkdirSync(dataDir, { recursive: true });
    api = await boot();
    org = await HttpUser.signIn(api.url, 'org');
    owner = await HttpUser.signIn(api.url, 'fault-owner');
    await owner.createTeam();
    const created = await org.createAgent('box-1');
    agentToken = created.token;
    agentId = created.id;
    newAgent('main');
  });
  afterAll(async () => {
    await stopProc(agent, 'SIGKILL');
    await stopProc(api);
    await db?.drop().catch(() => undefined);
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('drops the agent socket mid-stream: lines resume from the last ack, none lost or doubled', async () => {
    const marker = `drop${Date.now()}`;
    const run = await owner.startRun(await owner.upload(await toyEngineWith(ticks(300, 0.01, marker))));
    const watcher = new RunWatcher(api.url, { cookie: owner.cookie });
    expect((await watcher.join(run.id)).ok).toBe(true);
    await until('ticks streaming', () => watcher.lines.some((l) => l.text.includes(`${marker} 40`)));
    agent!.child.kill('SIGUSR2'); // the agent's socket drops; it reconnects and resends
    const done = await owner.waitFor(run.id, terminal, 60_000);
    expect(done.status, agent!.output()).toBe('succeeded');
    expect(agent!.output()).toMatch(/disconnected/);
    expect(await tickLines(run.id, marker)).toEqual([...Array(300).keys()]);
    await until('watcher caught up', () => watcher.lastSeq >= done.lastLogSeq);
    watcher.assertContiguous();
    watcher.close();
  });

  it('cancels while starting, while running, and after finishing', async () => {
    const marker = `cancel${Date.now()}`;
    const slow = await owner.upload(await toyEngineWith(ticks(400, 0.02, marker)));
    // While starting: the moment the hub has assigned it.
    const a = await owner.startRun(slow);
    await owner.waitFor(a.id, (r) => r.status !== 'queued', 15_000);
    const ca = await owner.post(`/api/runs/${a.id}/cancel`, { reason: 'changed my mind' });
    expect(ca.body.changed).toBe(true);
    expect((await owner.waitFor(a.id, terminal)).status).toBe('canceled');
    // While running: after some output, the process group goes (TERM, grace, KILL).
    const b = await owner.startRun(slow);
    await until('run b ticking', async () => (await tickLines(b.id, marker)).length > 20, 30_000);
    expect((await owner.post(`/api/runs/${b.id}/cancel`, { reason: 'enough' })).body.changed).toBe(true);
    await until('run b process gone', () => processesWith(b.id).length === 0 || null, 10_000);
    const bDone = await owner.waitFor(b.id, terminal);
    expect(bDone.status).toBe('canceled');
    // After finishing: nothing changes.
    const again = await owner.post(`/api/runs/${b.id}/cancel`, { reason: 'late' });
    expect(again.status).toBe(200);
    expect(again.body.changed).toBe(false);
    // The agent is free again and its workspaces are wiped.
    await until(
      'workspaces wiped',
      () =>
        !existsSync(path.join(agent!.workDir, 'runs', a.id)) &&
        !existsSync(path.join(agent!.workDir, 'runs', b.id)),
    );
  });

  it('kills the agent mid-run: the run fails as infra_error after its lease and never runs again', async () => {
    const marker = `kill${Date.now()}`;
    const run = await owner.startRun(await owner.upload(await toyEngineWith(ticks(600, 0.02, marker))));
    await until('ticking', async () => (await tickLines(run.id, marker)).length > 10, 30_000);
    await stopProc(agent, 'SIGKILL');
    // bubblewrap dies with its parent, and the whole pid namespace with it.
    await until('harness gone with the agent', () => processesWith(run.id).length === 0 || null, 10_000);
    const failed = await owner.waitFor(run.id, terminal, (LEASE + 5) * 1000);
    expect(failed.status).toBe('failed');
    expect(failed.failureCode).toBe('infra_error');
    // A new agent connects: the failed run is not dispatched again.
    newAgent('after-kill');
    await until('agent online', async () =>
      (await org.get('/api/admin/agents')).body.some(
        (a: { id: string; status: string }) => a.id === agentId && a.status === 'online',
      ),
    );
    await new Promise((r) => setTimeout(r, 1_000));
    const after = await owner.run(run.id);
    expect(after.status).toBe('failed');
    expect(after.finishedAt).toBe(failed.finishedAt);
  });

  it.skipIf(!sandbox.ok)(
    'contains a submission that tries the network, writes outside its workspace and leaves a child behind',
    async () => {
      let hits = 0;
      const server: Server = createServer((_req, res) => {
        hits++;
        res.end('reached');
      });
      await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
      const netPort = (server.address() as { port: number }).port;
      const marker = `escape${Date.now()}`;
      const outside = path.join(ROOT, '.data', 'test', `${marker}.txt`);
      const hostile = `
import subprocess as _sp, sys as _sys, urllib.request as _u
try:
    _u.urlopen("http://127.0.0.1:${netPort}/", timeout=2).read()
    print("NET: reached")
except Exception as _e:
    print("NET: blocked", type(_e).__name__)
for _p in (${JSON.stringify(outside)}, ${JSON.stringify(path.join(ROOT, `${marker}.txt`))}, "/etc/${marker}"):
    try:
        open(_p, "w").write("x")
        print("WRITE: done (in the sandbox)", _p)
    except Exception as _e:
        print("WRITE: blocked", type(_e).__name__)
_sp.Popen([_sys.executable, "-c", "import time; time.sleep(300)", "${marker}"], start_new_session=True)
print("CHILD: started")
`;
      try {
        const run = await owner.startRun(await owner.upload(await toyEngineWith(hostile)));
        const done = await owner.waitFor(run.id, terminal, 60_000);
        const text = (await owner.allLogs(run.id)).map((l) => l.text).join('\n');
        expect(text).toContain('NET: blocked');
        expect(text).not.toContain('NET: reached');
        // /etc is read-only inside; hidden folders (.data) are scratch tmpfs: nothing reaches the host.
        expect(text).toMatch(/WRITE: blocked/);
        expect(text).toContain('CHILD: started');
        expect(hits).toBe(0);
        expect(existsSync(outside)).toBe(false);
        expect(existsSync(path.join(ROOT, `${marker}.txt`))).toBe(false);
        await until(
          'the left-behind child is gone',
          () => processesWith(marker).length === 0 || null,
          10_000,
        );
        expect(done.status).toBe('succeeded');
      } finally {
        server.close();
      }
    },
  );

  it('restarts the API mid-run: the run survives and its result is accepted once', async () => {
    const marker = `restart${Date.now()}`;
    const run = await owner.startRun(await owner.upload(await toyEngineWith(ticks(250, 0.02, marker))));
    await until('ticking', async () => (await tickLines(run.id, marker)).length > 20, 30_000);
    await stopProc(api);
    await new Promise((r) => setTimeout(r, 1_000));
    api = await boot();
    const done = await owner.waitFor(run.id, terminal, 60_000);
    expect(done.status, `${agent!.output()}\n${api.output()}`).toBe('succeeded');
    expect(await tickLines(run.id, marker)).toEqual([...Array(250).keys()]);
    // The server stores the verdict before its ack reaches the agent: wait for the agent's line,
    // give a resend a moment to show up, then it must have been acknowledged exactly once.
    const acked = () =>
      agent!.output().match(new RegExp(`run ${run.id}: verdict acknowledged`, 'g'))?.length ?? 0;
    await until('the agent logs the acknowledged verdict', () => acked() > 0 || null, 15_000);
    await new Promise((r) => setTimeout(r, 500));
    expect(acked()).toBe(1);
  });

  it('revokes an agent: disconnected at once, its run fails, its token is refused on reconnect', async () => {
    const marker = `revoke${Date.now()}`;
    const run = await owner.startRun(await owner.upload(await toyEngineWith(ticks(600, 0.02, marker))));
    await until('ticking', async () => (await tickLines(run.id, marker)).length > 5, 30_000);
    const revoked = await org.delete(`/api/admin/agents/${agentId}`);
    expect(revoked.status).toBe(200);
    expect(revoked.body.status).toBe('revoked');
    const failed = await owner.waitFor(run.id, terminal, 10_000);
    expect(failed.failureCode).toBe('infra_error');
    expect(await agent!.exited).toBe(3);
    expect(agent!.output()).toMatch(/the hub revoked this agent: An organizer revoked this agent token/);
    await until('harness stopped', () => processesWith(run.id).length === 0 || null, 10_000);
    const socket = io(`${api.url}/agents`, {
      auth: { token: agentToken },
      transports: ['websocket'],
      forceNew: true,
      reconnection: false,
    });
    const err = await new Promise<Error & { data?: { code?: string } }>((resolve) =>
      socket.once('connect_error', resolve),
    );
    socket.close();
    expect(err.data?.code).toBe('agent_revoked');
  });
});
