import { mkdirSync, rmSync } from 'node:fs';
import * as path from 'node:path';
import type { BrowserContext } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiProc, HttpUser, startApi, stopProc, toyStarter, until } from '../support/agent-helpers';
import { browserCookies, BrowserProfiles } from '../support/browser';
import { createTestDatabase } from '../support/db';
import { FakeAgent } from '../support/fake-agent';
import { hasChromium } from '../support/prerequisites';
import { freePort, ROOT } from '../support/quickstart';

/**
 * Issue 14, item 5: the run page keeps streaming across a clean API restart. The API process is
 * stopped with SIGTERM (which disconnects every socket: "io server disconnect", after which
 * socket.io-client never reconnects on its own) and started again on the same port while a run
 * streams; the page must reconnect, rejoin from its last line, and show every line once, live.
 */
const LINES = 240;

describe.skipIf(!hasChromium())('web run page across an API restart', () => {
  let db: { url: string; drop: () => Promise<void> };
  let api: ApiProc | undefined;
  let port: number;
  let dataDir: string;
  let ctx: BrowserContext | undefined;
  let agent: FakeAgent | undefined;
  const profiles = new BrowserProfiles('dryft-e2e-restart-');
  const ORG = 'restart-org';

  const boot = async () => {
    api = await startApi({ dbUrl: db.url, port, dataDir, env: { ADMIN_LOGINS: ORG } });
  };

  beforeAll(async () => {
    db = await createTestDatabase();
    port = await freePort();
    dataDir = path.join(ROOT, '.data', 'test', `web-restart-${process.pid}-${Date.now()}`);
    mkdirSync(dataDir, { recursive: true });
    await boot();
  });
  afterAll(async () => {
    agent?.close();
    await profiles.closeAll();
    await stopProc(api);
    await db?.drop().catch(() => undefined);
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  });

  it('reconnects and shows every line once, live, after the API restarts mid-run', async () => {
    const url = `http://127.0.0.1:${port}`;
    const org = await HttpUser.signIn(url, ORG);
    const { token } = await org.createAgent('restart-box');
    // Survives the restart the way the real agent does: reconnects, reports the run, resends.
    agent = await FakeAgent.streaming(url, token, {
      lines: LINES,
      intervalMs: 25,
      text: (n) => `restart line ${n}`,
    });
    const owner = await HttpUser.signIn(url, 'restart-owner');
    await owner.createTeam();

    // Playwright's own default viewport: nothing here depends on the page's width.
    ctx = await profiles.open('owner', {
      baseURL: url,
      viewport: { width: 1280, height: 720 },
      cookie: owner.cookie,
    });
    const page = await ctx.newPage();
    // Every log line the page receives over a live socket, per socket.
    const sockets: number[][] = [];
    page.on('websocket', (ws) => {
      if (!ws.url().includes('/socket.io/')) return;
      const seqs: number[] = [];
      sockets.push(seqs);
      ws.on('framereceived', ({ payload }) => {
        const text = typeof payload === 'string' ? payload : payload.toString('utf8');
        if (!text.startsWith('42/live,')) return;
        const [event, body] = JSON.parse(text.slice('42/live,'.length)) as [
          string,
          { lines?: { seq: number }[] },
        ];
        if (event === 'run.log') seqs.push(...(body.lines ?? []).map((l) => l.seq));
      });
    });

    const run = await owner.startRun(await owner.upload(await toyStarter()));
    await page.goto(`/runs/${run.id}`);
    const shown = async () =>
      Number((await page.getByTestId('log-count').textContent())!.replace(/[^0-9]/g, ''));
    await until('the first lines on the page', async () => (await shown()) >= 40, 60_000);

    const restartedAt = Date.now();
    await stopProc(api);
    const atStop = await shown();
    expect(atStop).toBeLessThan(LINES); // the restart really lands mid-run
    await boot();
    console.log(`[e2e web-restart] API restarted in ${Date.now() - restartedAt} ms at line ${atStop}`);

    await until('every line on the page', async () => (await shown()) === LINES, 60_000);
    const final = await owner.waitFor(run.id, (r) => r.status === 'succeeded', 30_000);
    expect(final.lastLogSeq).toBe(LINES);
    await page.getByText(`restart line ${LINES}`).waitFor({ timeout: 10_000 });
    expect(await shown()).toBe(LINES);

    // It came back over a new live socket (not the 5 s REST fallback), which carried the tail.
    expect(sockets.length).toBeGreaterThanOrEqual(2);
    const after = sockets.slice(1).flat();
    expect(after).toContain(LINES);
    // No line was sent twice over the sockets: the rejoin asked only for what came after the last.
    const all = sockets.flat();
    expect(new Set(all).size).toBe(all.length);
  }, 180_000);

  it('a member removed mid-run sees why the live log stopped, and gets no more lines', async () => {
    const url = `http://127.0.0.1:${port}`;
    const owner = await HttpUser.signIn(url, 'restart-owner');
    const me = (await owner.get('/api/me')).body as { activeTeamId: string };
    const teamId = me.activeTeamId;
    const inviteCode = (await owner.get(`/api/teams/${teamId}`)).body.inviteCode as string;
    const member = await HttpUser.signIn(url, 'restart-member');
    expect((await member.post('/api/teams/join', { code: inviteCode })).status).toBe(200);
    const memberId = ((await member.get('/api/me')).body as { user: { id: string } }).user.id;

    const page = await ctx!.newPage();
    await ctx!.clearCookies();
    await ctx!.addCookies(browserCookies(member.cookie, url));
    const run = await owner.startRun(await owner.upload(await toyStarter()));
    await page.goto(`/runs/${run.id}`);
    const shown = async () =>
      Number((await page.getByTestId('log-count').textContent())!.replace(/[^0-9]/g, ''));
    await until('lines on the page of the member', async () => (await shown()) >= 20, 60_000).catch(
      async (err: Error) => {
        const r = await owner.run(run.id);
        throw new Error(
          `${err.message}: run ${r.status}, ${r.lastLogSeq} lines; page: ${(await page.textContent('body'))?.slice(0, 800)}`,
        );
      },
    );
    const removedAt = Date.now();
    expect((await owner.delete(`/api/teams/${teamId}/members/${memberId}`)).status).toBe(200);
    // What was stored when the removal returned: the page may still draw lines it received (or
    // fetched) before the cut, never one stored after it.
    const storedAtRemoval = (await owner.run(run.id)).lastLogSeq;
    const alert = page.getByTestId('live-revoked');
    await alert.waitFor({ timeout: 5_000 });
    console.log(`[e2e web-restart] removal shown on the page after ${Date.now() - removedAt} ms`);
    expect(await alert.textContent()).toMatch(/Live updates stopped: You were removed from this team/);
    await new Promise((r) => setTimeout(r, 1_000));
    const settled = await shown();
    await new Promise((r) => setTimeout(r, 2_000));
    expect(await shown()).toBe(settled);
    expect(settled).toBeLessThanOrEqual(storedAtRemoval);
    expect(settled).toBeLessThan(LINES);
    await page.close();
  }, 120_000);
});
