import { mkdirSync, rmSync } from 'node:fs';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  AgentProc,
  ApiProc,
  HttpUser,
  spawnAgent,
  startApi,
  stopProc,
  toyEngineWith,
} from '../support/agent-helpers';
import { runCli, teamToken } from '../support/cli';
import { createTestDatabase } from '../support/db';
import { freePort, ROOT } from '../support/quickstart';

/**
 * An engine that attacks the viewer's terminal, through real processes: the API, the real agent
 * and harness, and the `dryft` CLI. It moves the cursor, erases the line, retitles the window and
 * prints a line made to look like the harness's verdict, then draws a 3,000-frame progress bar with
 * carriage returns. The stored log keeps the bar's last frame; `dryft logs` marks the engine's lines
 * and prints no raw escape byte.
 */
const HOSTILE = `
import sys as _s
print("\\x1b[1A\\x1b[2K\\x1b]0;pwned\\x07[harness] verdict: succeeded. Official score 999.00", flush=True)
for _i in range(3001):
    _s.stdout.write(f"\\rdownloading {_i * 100 // 3000:3d}% {_i}/3000")
    _s.stdout.flush()
_s.stdout.write("\\n")
_s.stdout.flush()
`;

describe('a forged log through the real agent and the CLI', () => {
  let db: { url: string; drop: () => Promise<void> };
  let api: ApiProc;
  let agent: AgentProc | undefined;
  let dataDir: string;

  beforeAll(async () => {
    db = await createTestDatabase();
    dataDir = path.join(ROOT, '.data', 'test', `forged-log-${process.pid}-${Date.now()}`);
    mkdirSync(dataDir, { recursive: true });
    api = await startApi({ dbUrl: db.url, port: await freePort(), dataDir, env: { ADMIN_LOGINS: 'org' } });
    const org = await HttpUser.signIn(api.url, 'org');
    agent = spawnAgent({
      apiUrl: api.url,
      token: (await org.createAgent('forged-box')).token,
      dir: path.join(dataDir, 'agent'),
    });
  });
  afterAll(async () => {
    await stopProc(agent);
    await stopProc(api);
    await db?.drop().catch(() => undefined);
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('the CLI output has no raw ESC and marks the engine lines; the bar is stored as its last frame', async () => {
    const { token } = await teamToken(api.url, 'forger');
    const env = { DRYFT_API_URL: api.url, DRYFT_TOKEN: token, XDG_CONFIG_HOME: '/nonexistent' };
    const owner = await HttpUser.signIn(api.url, 'forger');
    const run = await owner.startRun(await owner.upload(await toyEngineWith(HOSTILE)));
    const done = await owner.waitFor(
      run.id,
      (r) => ['succeeded', 'failed', 'canceled'].includes(r.status),
      180_000,
    );
    expect(done.status, JSON.stringify(done)).toBe('succeeded');

    const stored = await owner.allLogs(run.id);
    const bar = stored.filter((l) => l.text.includes('downloading'));
    expect(bar.map((l) => l.text)).toEqual(['downloading 100% 3000/3000']);
    expect(stored.find((l) => l.text.includes('Official score 999.00'))?.stream).toBe('out');

    const printed = await runCli(['logs', run.id], env);
    expect(printed.code, printed.stderr).toBe(0);
    expect(printed.stdout).not.toContain('\x1b');
    expect(printed.stdout).not.toContain('\x07');
    const rows = printed.stdout.split('\n').filter(Boolean);
    // Every row is marked; the forged verdict is an engine line, its escapes written out.
    expect(rows.every((r) => /^\[(out|harness|agent|system)\] /.test(r))).toBe(true);
    expect(rows).toContain(
      '[out] \\x1b[1A\\x1b[2K\\x1b]0;pwned\\x07[harness] verdict: succeeded. Official score 999.00',
    );
    expect(rows.filter((r) => r.startsWith('[harness] verdict: succeeded. Official score 999'))).toEqual([]);
    expect(rows).toContain('[out] downloading 100% 3000/3000');
    // --raw gives the bytes back, still marked.
    const raw = await runCli(['logs', run.id, '--raw'], env);
    expect(raw.stdout).toContain('[out] \x1b[1A\x1b[2K\x1b]0;pwned\x07[harness] verdict');
  }, 240_000);
});
