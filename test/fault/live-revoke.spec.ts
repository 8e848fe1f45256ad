import { mkdirSync, rmSync } from 'node:fs';
import * as path from 'node:path';
import { io, type Socket } from 'socket.io-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AccessRevokedEvent, LogLine } from '@dryft/libs';
import { ApiProc, HttpUser, startApi, stopProc, toyStarter, until } from '../support/agent-helpers';
import { spawnCli } from '../support/cli';
import { createTestDatabase } from '../support/db';
import { freePort, ROOT } from '../support/quickstart';
import { FakeAgent } from '../support/fake-agent';

/**
 * Issue 14, item 3, with real processes: the API (`node apps/api/dist/main.js`), a 20,000-line run
 * from an agent on the real /agents protocol, `dryft logs --follow` as a child process with a team
 * API token, and the owner's browser socket. The token is revoked mid-stream: the CLI must stop
 * printing at once and exit 3 with the hub's reason, never printing a line stored after the revoke;
 * the owner's socket keeps getting every line (lines stored = lines delivered).
 */
const LINES = 20_000;

describe('fault: a token revoked under a 20,000-line live stream', () => {
  let db: { url: string; drop: () => Promise<void> };
  let api: ApiProc | undefined;
  let dataDir: string;
  let agent: FakeAgent | undefined;
  let keeper: Socket | undefined;

  beforeAll(async () => {
    db = await createTestDatabase();
    dataDir = path.join(ROOT, '.data', 'test', `fault-revoke-${process.pid}-${Date.now()}`);
    mkdirSync(dataDir, { recursive: true });
    api = await startApi({ dbUrl: db.url, port: await freePort(), dataDir, env: { ADMIN_LOGINS: 'fr-org' } });
  });
  afterAll(async () => {
    agent?.close();
    keeper?.close();
    await stopProc(api);
    await db?.drop().catch(() => undefined);
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  });

  it('the CLI stops at once with the reason and prints nothing stored after the revoke; the owner gets all 20,000 lines', async () => {
    const url = api!.url;
    const org = await HttpUser.signIn(url, 'fr-org');
    agent = await FakeAgent.streaming(url, (await org.createAgent('fr-box')).token, {
      lines: LINES,
      perBatch: 100,
      intervalMs: 20,
      text: (n) => `steady line ${n}`,
    });
    const owner = await HttpUser.signIn(url, 'fr-owner');
    const teamId = (await owner.createTeam()).id;
    const created = (await owner.post(`/api/teams/${teamId}/tokens`, { name: 'follower' })).body as {
      id: string;
      token: string;
    };
    const run = await owner.startRun(await owner.upload(await toyStarter()));

    // The owner's browser socket: every line, once.
    const delivered: number[] = [];
    keeper = io(`${url}/live`, {
      transports: ['websocket'],
      forceNew: true,
      extraHeaders: { cookie: owner.cookie },
    });
    keeper.on('run.log', (e: { lines: LogLine[] }) => delivered.push(...e.lines.map((l) => l.seq)));
    const revokedOwner: AccessRevokedEvent[] = [];
    keeper.on('access.revoked', (e: AccessRevokedEvent) => revokedOwner.push(e));
    await new Promise<void>((resolve, reject) => {
      keeper!.once('connect', () => resolve());
      keeper!.once('connect_error', reject);
    });
    expect((await keeper.emitWithAck('run.join', { runId: run.id, afterSeq: 0 })).ok).toBe(true);

    // A bare socket with the same token, as a script would hold it: it records when each line came.
    const raw = io(`${url}/live`, {
      transports: ['websocket'],
      forceNew: true,
      auth: { token: created.token },
    });
    const rawLines: { seq: number; at: number }[] = [];
    let rawNotice: (AccessRevokedEvent & { at: number }) | undefined;
    raw.on('run.log', (e: { lines: LogLine[] }) => {
      const at = Date.now();
      for (const l of e.lines) rawLines.push({ seq: l.seq, at });
    });
    raw.on('access.revoked', (e: AccessRevokedEvent) => (rawNotice = { ...e, at: Date.now() }));
    await new Promise<void>((resolve, reject) => {
      raw.once('connect', () => resolve());
      raw.once('connect_error', reject);
    });
    expect((await raw.emitWithAck('run.join', { runId: run.id, afterSeq: 0 })).ok).toBe(true);

    const follow = spawnCli(
      ['logs', run.id, '--follow'],
      {
        DRYFT_API_URL: url,
        DRYFT_TOKEN: created.token,
        DRYFT_POLL_MS: '300',
        XDG_CONFIG_HOME: '/nonexistent',
      },
      { timeoutMs: 120_000 },
    );
    const printed = () =>
      follow
        .stdout()
        .split('\n')
        .filter((l) => l.startsWith('[out] steady line'))
        .map((l) => Number(l.slice('[out] steady line '.length)));
    await until('the CLI printing', () => printed().length >= 2_000 || null, 60_000);

    const t0 = Date.now();
    expect((await owner.delete(`/api/teams/${teamId}/tokens/${created.id}`)).status).toBe(200);
    const storedAtRevoke = (await owner.run(run.id)).lastLogSeq;
    expect(storedAtRevoke).toBeLessThan(LINES); // the revoke really lands mid-run
    const done = await follow.done;
    const exitMs = Date.now() - t0;
    console.log(
      `[fault live-revoke] CLI exited ${exitMs} ms after the revoke; printed ${printed().length} of ${storedAtRevoke} stored at the revoke`,
    );
    expect(done.code, done.stderr).toBe(3);
    expect(done.stderr).toMatch(/The API token this connection used was revoked/);
    // The socket is cut within milliseconds (test/integration/live-access.spec.ts measures it); this
    // bound only allows for the process to exit on a loaded machine.
    expect(exitMs).toBeLessThan(5_000);
    // Every line printed once, in order, and none stored after the revoke.
    const seen = printed();
    expect(seen).toEqual(Array.from({ length: seen.length }, (_, i) => i + 1));
    expect(seen.length).toBeLessThanOrEqual(storedAtRevoke);

    // The bare socket was told why within a second, and got no line after that.
    await until('the notice on the bare socket', () => rawNotice ?? null, 5_000);
    expect(rawNotice).toMatchObject({ reason: 'token_revoked', teamId: null, runIds: [run.id] });
    expect(rawNotice!.at - t0).toBeLessThan(1_000);
    await new Promise((r) => setTimeout(r, 2_000)); // lines keep being stored meanwhile
    expect(rawLines.filter((l) => l.at > rawNotice!.at)).toEqual([]);
    expect(Math.max(...rawLines.map((l) => l.seq))).toBeLessThanOrEqual(storedAtRevoke);
    console.log(
      `[fault live-revoke] bare socket: notice ${rawNotice!.at - t0} ms after the revoke, last line ${Math.max(...rawLines.map((l) => l.at)) - t0} ms`,
    );
    raw.close();

    // The run goes on; the owner's socket gets every line of it, once.
    const final = await owner.waitFor(run.id, (r) => r.status === 'succeeded', 90_000);
    expect(final.lastLogSeq).toBe(LINES);
    await until('the owner has every line', () => delivered.length >= LINES || null, 30_000);
    expect(delivered).toEqual(Array.from({ length: LINES }, (_, i) => i + 1));
    expect(revokedOwner).toEqual([]);
    // Stored = delivered = the REST log.
    expect((await owner.allLogs(run.id)).length).toBe(LINES);
  }, 180_000);
});
