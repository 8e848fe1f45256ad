import { mkdirSync, rmSync } from 'node:fs';
import * as path from 'node:path';
import { io } from 'socket.io-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RunAssign, utf8Bytes } from '@dryft/libs';
import { loadBenchmarkDefinitions } from '@dryft/libs/node';
import type { LogLine } from '@dryft/libs';
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
import { createTestDatabase } from '../support/db';
import { freePort, ROOT } from '../support/quickstart';

/**
 * The log cap (issue 14, item 6), with real processes: an engine that prints 1,000,000 lines and
 * one 10 MB line through the real agent and harness, and an agent that ignores the cap and sends
 * all of it over the real protocol (the API enforces the cap itself). The cap is toy-decode's, from
 * its definition (200,000 lines, 32 MB, 16,384 bytes a line, the last 1,000 lines kept).
 */
const CAP = loadBenchmarkDefinitions(path.join(ROOT, 'config/benchmarks')).find(
  (d) => d.id === 'toy-decode',
)!.logs;
const FLOOD = 1_000_000;
const BIG = 10 * 1024 * 1024;

function checkCapped(stored: LogLine[], first: string, last: string, cutLine: boolean) {
  expect(stored.length).toBeLessThanOrEqual(CAP.maxLines);
  expect(stored.reduce((n, l) => n + utf8Bytes(l.text), 0)).toBeLessThanOrEqual(CAP.maxBytes);
  expect(stored.every((l) => utf8Bytes(l.text) <= CAP.maxLineBytes)).toBe(true);
  // Contiguous: no gap where lines were dropped, the notice stands there.
  expect(stored.map((l) => l.seq)).toEqual(stored.map((_, i) => i + 1));
  const texts = stored.map((l) => l.text);
  const capped = `dropped here: this run's log is capped at ${CAP.maxLines.toLocaleString('en-US')} lines`;
  const notices = texts.filter((t) => / lines \(.+\) dropped here/.test(t) && t.includes(capped));
  expect(notices).toHaveLength(1);
  const at = texts.indexOf(notices[0]);
  // The start before the notice, the end after it.
  expect(texts.indexOf(first)).toBeGreaterThanOrEqual(0);
  expect(texts.indexOf(first)).toBeLessThan(at);
  expect(texts.indexOf(last)).toBeGreaterThan(at);
  expect(stored.length - at - 1).toBeLessThanOrEqual(CAP.tailLines);
  // The 10 MB line: one line cut with a marker (an agent that sends it in protocol-sized pieces
  // gets pieces, each within the cap per line).
  const big = texts.filter((t) => t.startsWith('big:'));
  const marker = / … \[line cut: this run's log keeps 16,384 bytes per line\]$/;
  expect(big.length > 0 && big.every((t) => marker.test(t) === cutLine)).toBe(true);
  return notices[0];
}

describe('the log cap: a flood of lines and a 10 MB line are capped, the run is still judged', () => {
  let db: { url: string; drop: () => Promise<void> };
  let api: ApiProc;
  let dataDir: string;
  let org: HttpUser;
  let owner: HttpUser;
  let agent: AgentProc | undefined;

  beforeAll(async () => {
    db = await createTestDatabase();
    const port = await freePort();
    dataDir = path.join(ROOT, '.data', 'test', `log-cap-${process.pid}-${Date.now()}`);
    mkdirSync(dataDir, { recursive: true });
    api = await startApi({ dbUrl: db.url, port, dataDir, env: { ADMIN_LOGINS: 'org' } });
    org = await HttpUser.signIn(api.url, 'org');
    owner = await HttpUser.signIn(api.url, 'cap-owner');
    await owner.createTeam();
  });
  afterAll(async () => {
    await stopProc(agent, 'SIGKILL');
    await stopProc(api);
    await db?.drop().catch(() => undefined);
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('the real agent and harness: 1,000,000 lines and a 10 MB line are stored within the cap, start and end kept, verdict stored', async () => {
    agent = spawnAgent({
      apiUrl: api.url,
      token: (await org.createAgent('cap-box')).token,
      dir: path.join(dataDir, 'agent'),
    });
    const flood = `
import sys as _s
_s.stdout.write("".join(f"flood {_i}\\n" for _i in range(${FLOOD})))
_s.stdout.write("big:" + "x" * ${BIG} + "\\n")
_s.stdout.write("after-big\\n")
_s.stdout.flush()
`;
    try {
      await floodThroughAgent(flood);
    } finally {
      // The next test's agent must be the only one.
      await stopProc(agent, 'SIGKILL');
      agent = undefined;
    }
  });

  async function floodThroughAgent(flood: string) {
    const run = await owner.startRun(await owner.upload(await toyEngineWith(flood)));
    const watcher = new RunWatcher(api.url, { cookie: owner.cookie });
    expect((await watcher.join(run.id)).ok).toBe(true);
    const done = await owner.waitFor(run.id, terminal, 170_000);
    expect(done.status, `${done.message}\n${agent.output().slice(-3000)}`).toBe('succeeded');
    expect(done.score).not.toBeNull();
    const stored = await owner.allLogs(run.id);
    const notice = checkCapped(stored, 'flood 0', 'after-big', true);
    expect(stored.some((l) => l.text === `flood ${FLOOD - 1}`)).toBe(true);
    expect(stored.find((l) => l.text === notice)!.stream).toBe('agent'); // the agent capped it first
    // Live watchers saw exactly what is stored.
    await until('watcher caught up', () => watcher.lastSeq >= done.lastLogSeq, 30_000);
    expect(watcher.lines.map((l) => [l.seq, l.text])).toEqual(stored.map((l) => [l.seq, l.text]));
    watcher.close();
  }

  it('an agent that ignores the cap: the API enforces it, with its own notice, and the verdict is stored', async () => {
    const token = (await org.createAgent('untrusted-box')).token;
    const socket = io(`${api.url}/agents`, { auth: { token }, transports: ['websocket'], forceNew: true });
    const finished = new Promise<unknown>((resolve, reject) => {
      socket.on('run.assign', (raw: unknown, ack: (a: unknown) => void) => {
        const assign = RunAssign.parse(raw);
        ack({ accepted: true });
        void (async () => {
          const send = (e: string, p: unknown) => socket.timeout(60_000).emitWithAck(e, p);
          await send('run.started', { runId: assign.runId });
          let seq = 0;
          let n = 0;
          const texts: string[] = [];
          for (let i = 0; i < FLOOD; i++) texts.push(`flood ${i}`);
          // A 10 MB line reaches the API as protocol-sized pieces (16,384 characters at most each).
          const piece = 'x'.repeat(16_384 - 4);
          for (let i = 0; i < BIG / piece.length; i++) texts.push(`big:${piece}`);
          texts.push('after-big');
          // Batches as large as the protocol allows (5,000 entries, well under the message limit).
          for (let i = 0; i < texts.length;) {
            const entries = [];
            let bytes = 0;
            while (i < texts.length && entries.length < 5000 && bytes < 1_500_000) {
              bytes += texts[i].length;
              entries.push({ type: 'log', n: ++n, ts: Date.now(), stream: 'out', text: texts[i++] });
            }
            const ack = (await send('run.batch', { runId: assign.runId, seq: ++seq, entries })) as {
              ok: boolean;
            };
            if (!ack.ok) throw new Error(`batch ${seq} refused: ${JSON.stringify(ack)}`);
          }
          resolve(
            await send('run.finished', {
              runId: assign.runId,
              lastSeq: seq,
              canceled: false,
              exitCode: 0,
              result: {
                type: 'result',
                status: 'succeeded',
                failureCode: null,
                message: 'All checks passed.',
                score: 123,
                workloads: [],
                metrics: {},
              },
            }),
          );
        })().catch(reject);
      });
    });
    socket.on('connect', () =>
      socket.emit(
        'agent.ready',
        {
          capabilities: {
            accelerator: 'cpu',
            gpuModel: null,
            gpuCount: 0,
            driver: null,
            harnessVersion: 'untrusted',
            agentVersion: 'untrusted',
            benchmarks: [],
          },
          slots: [{ index: 0, gpus: [] }],
          activeRuns: [],
        },
        () => undefined,
      ),
    );
    try {
      const run = await owner.startRun(await owner.upload(await toyEngineWith('# untrusted')));
      expect(await finished).toEqual({ ok: true });
      const done = await owner.waitFor(run.id, terminal, 60_000);
      expect(done.status).toBe('succeeded');
      expect(done.score).toBe(123);
      const stored = await owner.allLogs(run.id);
      const notice = checkCapped(stored, 'flood 0', 'after-big', false);
      expect(stored.find((l) => l.text === notice)!.stream).toBe('system'); // the API capped it
      expect(notice).toMatch(/^… [\d,]+ lines \([\d.]+ MB\) dropped here/);

      // Organizers see what each team stores; members are refused.
      const storage = await org.get('/api/admin/storage');
      expect(storage.status).toBe(200);
      const team = storage.body.teams.find((t: { name: string }) => t.name === 'cap-owner team');
      expect(team.runs).toBe(2);
      expect(team.submissions).toBe(2);
      expect(team.logLines).toBeLessThanOrEqual(2 * CAP.maxLines);
      expect(team.logLines).toBeGreaterThan(2 * (CAP.maxLines - CAP.tailLines - 1));
      expect(team.logBytes).toBeLessThanOrEqual(2 * CAP.maxBytes);
      expect(team.artifactBytes).toBeGreaterThan(0);
      expect(team.totalBytes).toBe(team.logBytes + team.artifactBytes);
      const refused = await owner.get('/api/admin/storage');
      expect(refused.status).toBe(403);
      expect(refused.body.error.code).toBe('organizers_only');
    } finally {
      socket.close();
    }
  });
});
