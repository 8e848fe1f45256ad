import { mkdirSync, rmSync } from 'node:fs';
import * as path from 'node:path';
import { io } from 'socket.io-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  AgentProc,
  ApiProc,
  HttpUser,
  RunWatcher,
  spawnAgent,
  startApi,
  stopProc,
  terminal,
  toyEngineWith,
  until,
} from '../support/agent-helpers';
import { OwnPostgres } from '../support/own-postgres';
import { freePort, ROOT } from '../support/quickstart';

/**
 * Postgres stopped and started under a live run (a server of the test's own: never the machine's
 * shared one). While it is down every route says 503 `database_unavailable` with Retry-After, and
 * both socket handshakes say the database is unavailable (not an authentication failure); when it
 * is back the hub recovers by itself and the run finishes with every line.
 */
const TICKS = 300;
const ticks = (marker: string) => `
import time as _t
for _i in range(${TICKS}):
    print(f"tick ${marker} {_i}", flush=True)
    _t.sleep(0.02)
`;

type Refusal = Error & { data?: { code?: string } };
const handshake = (url: string, opts: Parameters<typeof io>[1]) =>
  new Promise<Refusal | 'connected'>((resolve) => {
    const socket = io(url, { transports: ['websocket'], forceNew: true, reconnection: false, ...opts });
    socket.once('connect', () => {
      socket.close();
      resolve('connected');
    });
    socket.once('connect_error', (err) => {
      socket.close();
      resolve(err as Refusal);
    });
  });

describe('a Postgres outage under a live run', () => {
  let pg: OwnPostgres;
  let api: ApiProc;
  let agent: AgentProc;
  let owner: HttpUser;
  let agentToken: string;
  let dataDir: string;

  beforeAll(async () => {
    pg = await OwnPostgres.create('fault-outage-pg');
    dataDir = path.join(ROOT, '.data', 'test', `fault-outage-${process.pid}-${Date.now()}`);
    mkdirSync(dataDir, { recursive: true });
    api = await startApi({ dbUrl: pg.url, port: await freePort(), dataDir, env: { ADMIN_LOGINS: 'org' } });
    const org = await HttpUser.signIn(api.url, 'org');
    agentToken = (await org.createAgent('outage-box')).token;
    agent = spawnAgent({ apiUrl: api.url, token: agentToken, dir: path.join(dataDir, 'agent') });
    owner = await HttpUser.signIn(api.url, 'outage-owner');
    await owner.createTeam();
  });

  afterAll(async () => {
    await stopProc(agent, 'SIGKILL');
    await stopProc(api);
    pg?.destroy();
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  });

  it('answers 503 database_unavailable while Postgres is down, recovers by itself, and the run keeps every line', async () => {
    const marker = `outage${Date.now()}`;
    const run = await owner.startRun(await owner.upload(await toyEngineWith(ticks(marker))));
    const watcher = new RunWatcher(api.url, { cookie: owner.cookie });
    expect((await watcher.join(run.id)).ok).toBe(true);
    await until('ticking', () => watcher.lines.some((l) => l.text === `tick ${marker} 30`) || null, 60_000);

    pg.stop();
    const downAt = Date.now();
    try {
      const health = await fetch(`${api.url}/api/health`);
      expect(health.status).toBe(503);
      for (const [method, route] of [
        ['GET', `/api/runs/${run.id}`],
        ['GET', `/api/runs/${run.id}/logs?after=0`],
        ['GET', '/api/teams'],
        ['GET', '/api/me'],
        ['GET', '/api/leaderboards/toy-decode'],
        ['POST', `/api/runs/${run.id}/cancel`],
      ] as const) {
        const res = await fetch(`${api.url}${route}`, {
          method,
          headers: {
            cookie: owner.cookie,
            'x-csrf-token': owner.csrf,
            'content-type': 'application/json',
          },
          body: method === 'POST' ? JSON.stringify({ reason: 'during the outage' }) : undefined,
        });
        const body = (await res.json()) as { error?: { code: string; message: string } };
        expect({ route, status: res.status, code: body.error?.code }).toEqual({
          route,
          status: 503,
          code: 'database_unavailable',
        });
        expect(body.error!.message).toMatch(/database is unavailable.*Retry in \d+ s/);
        expect(Number(res.headers.get('retry-after'))).toBeGreaterThan(0);
      }
      // The handshakes say what is wrong: not the user's credentials.
      const live = await handshake(`${api.url}/live`, { extraHeaders: { cookie: owner.cookie } });
      expect(live).not.toBe('connected');
      expect((live as Refusal).data?.code).toBe('database_unavailable');
      expect((live as Refusal).message).not.toMatch(/Authentication failed/);
      const agents = await handshake(`${api.url}/agents`, { auth: { token: agentToken } });
      expect(agents).not.toBe('connected');
      expect((agents as Refusal).data?.code).toBe('database_unavailable');
      // Stay down a while: the engine keeps printing, the agent keeps what it cannot store.
      await new Promise((r) => setTimeout(r, 4_000));
    } finally {
      pg.start();
    }
    const upAt = Date.now();
    await until(
      'health back',
      async () => (await fetch(`${api.url}/api/health`)).status === 200 || null,
      60_000,
    );
    const recoveryMs = Date.now() - upAt;
    console.log(
      `[fault] Postgres down ${upAt - downAt} ms; the hub answered 200 again ${recoveryMs} ms after it came back (no restart)`,
    );

    const done = await owner.waitFor(run.id, terminal, 120_000);
    expect(done.status, `${JSON.stringify(done)}\n${agent.output()}\n${api.output()}`).toBe('succeeded');
    const stored = (await owner.allLogs(run.id))
      .filter((l) => l.text.startsWith(`tick ${marker} `))
      .map((l) => Number(l.text.split(' ')[2]));
    expect(stored).toEqual([...Array(TICKS).keys()]);
    await until('watcher caught up', () => watcher.lastSeq >= done.lastLogSeq || null, 30_000);
    watcher.assertContiguous();
    expect(
      watcher.lines
        .filter((l) => l.text.startsWith(`tick ${marker} `))
        .map((l) => Number(l.text.split(' ')[2])),
    ).toEqual(stored);
    watcher.close();
    // The same API process throughout.
    expect(api.child.exitCode).toBeNull();
    const live = await handshake(`${api.url}/live`, { extraHeaders: { cookie: owner.cookie } });
    expect(live).toBe('connected');
  });
});
