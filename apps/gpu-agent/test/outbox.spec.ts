import { afterAll, describe, expect, it } from 'vitest';
import { mkdirSync, mkdtempSync, realpathSync, rmSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { RunBatch } from '@dryft/libs';
import { Outbox } from '../src/outbox';
import { bwrapArgs, JAIL_CAPS, SandboxPlanError } from '../src/sandbox';

/** A server stand-in with the real dedup rule: store seq last+1, ack resends, refuse gaps. */
function server() {
  const stored: RunBatch[] = [];
  let last = 0;
  return {
    stored,
    lines: () =>
      stored.flatMap((b) => b.entries.filter((e) => e.type === 'log').map((e) => (e as { n: number }).n)),
    async receive(b: RunBatch) {
      if (b.seq <= last) return { ok: true, ackedSeq: last };
      if (b.seq > last + 1) return { ok: false, ackedSeq: last };
      stored.push(b);
      last = b.seq;
      return { ok: true, ackedSeq: last };
    },
  };
}

describe('Outbox', () => {
  it('numbers lines and batches, and resends what was not acknowledged after a cut', async () => {
    const s = server();
    let online = true;
    let dropNextAck = 2;
    const outbox = new Outbox(
      'run-1',
      async (b) => {
        const ack = await s.receive(b);
        // The ack of a stored batch is lost on the way back (the socket dropped): the agent must resend.
        if (dropNextAck-- === 1) throw new Error('timeout');
        return ack;
      },
      () => online,
      () => undefined,
      5,
    );
    for (let i = 0; i < 30; i++) {
      outbox.line('out', `line ${i}`);
      if (i % 7 === 0) await new Promise((r) => setTimeout(r, 10));
      if (i === 15) online = false;
      if (i === 25) {
        online = true;
        void outbox.pump();
      }
    }
    outbox.cut();
    await outbox.drained();
    expect(s.lines()).toEqual(Array.from({ length: 30 }, (_, i) => i + 1));
    expect(outbox.ackedSeq).toBe(outbox.lastSeq);
    outbox.close();
  });

  it('cuts an over-long line with a marker (one line) and stops when the server says so', async () => {
    const s = server();
    let stopped = false;
    const outbox = new Outbox(
      'run-2',
      async (b) => ({ ...(await s.receive(b)), stop: true }),
      () => true,
      () => (stopped = true),
      5,
    );
    outbox.line('out', 'x'.repeat(40_000));
    outbox.cut();
    await outbox.drained();
    expect(s.lines()).toEqual([1]);
    const text = (s.stored[0].entries[0] as { text: string }).text;
    expect(text.length).toBeLessThanOrEqual(16_384);
    expect(text).toMatch(/^x+ … \[line cut: this run's log keeps 16,384 bytes per line\]$/);
    expect(stopped).toBe(true);
  });

  it('stops resending a batch the hub refused for good, logs why and stops the run', async () => {
    let sends = 0;
    let stopped = false;
    const logged: string[] = [];
    const outbox = new Outbox(
      'not-a-uuid',
      async () => {
        sends++;
        return {
          ok: false,
          final: true,
          error: { code: 'invalid_payload', message: 'malformed run.batch: runId' },
        };
      },
      () => true,
      () => (stopped = true),
      5,
      (m) => logged.push(m),
    );
    outbox.line('out', 'hello');
    outbox.cut();
    await outbox.drained();
    await new Promise((r) => setTimeout(r, 300));
    expect(sends).toBe(1);
    expect(stopped).toBe(true);
    expect(logged.join('\n')).toMatch(
      /refused batch 1 for good \(invalid_payload: malformed run.batch: runId\)/,
    );
  });

  it('sends the head of a capped log as it comes and the notice and last lines at the end, numbered without a gap', async () => {
    const s = server();
    const limits = { maxLines: 100, maxBytes: 1024 * 1024, maxLineBytes: 16_384, tailLines: 10 };
    const outbox = new Outbox(
      'run-3',
      (b) => s.receive(b),
      () => true,
      () => undefined,
      5,
      () => undefined,
      limits,
    );
    for (let i = 0; i < 1000; i++) outbox.line('out', `line ${i}`);
    outbox.cut();
    await outbox.drained();
    expect(s.lines()).toEqual([...Array(89).keys()].map((i) => i + 1)); // 100 - 10 - 1 sent live
    outbox.endOfLog();
    outbox.cut();
    await outbox.drained();
    const texts = s.stored.flatMap((b) => b.entries.map((e) => (e as { text: string }).text));
    expect(s.lines()).toEqual([...Array(100).keys()].map((i) => i + 1));
    expect(texts[0]).toBe('line 0');
    expect(texts[89]).toMatch(/^… 901 lines \(\d+ KB\) dropped here: this run's log is capped at 100 lines/);
    expect(texts.slice(90)).toEqual([...Array(10).keys()].map((i) => `line ${990 + i}`));
  });
});

describe('bwrapArgs', () => {
  const base = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'bwrap-plan-')));
  for (const d of ['s', 'w', 'p', 'agent/work']) mkdirSync(path.join(base, d), { recursive: true });
  afterAll(() => rmSync(base, { recursive: true, force: true }));
  const plan = {
    workspace: `${base}/w`,
    privateDir: `${base}/p`,
    readOnly: [`${base}/s`, '/usr/lib/python3'],
    gpus: ['3'],
    forbidden: ['/home', '/tmp', `${base}/agent/work`],
    tmpBytes: 1 << 20,
    env: { PATH: '/usr/bin' },
    command: ['python3', '-m', 'harness'],
  };

  it('mounts an allowlist: never the host root, the workspace read-only, only the slot GPU', () => {
    const args = bwrapArgs(plan);
    const s = args.join(' ');
    for (const flag of [
      '--unshare-net',
      '--unshare-pid',
      '--new-session',
      '--die-with-parent',
      '--cap-drop ALL',
      '--clearenv',
      `--ro-bind ${base}/s ${base}/s`,
      `--ro-bind ${base}/w /dryft/workspace`,
      `--bind ${base}/p /dryft/private`,
      '--size 1048576 --tmpfs /tmp',
    ])
      expect(s).toContain(flag);
    expect(s).not.toContain('--ro-bind / /');
    expect(s).not.toContain('/etc/shadow');
    // /usr is mounted whole (read-only): a folder inside it is not mounted a second time.
    expect(s).not.toContain('/usr/lib/python3');
    expect(
      args.filter((a) => a.startsWith('/dev/nvidia') && /\d$/.test(a)).every((a) => a === '/dev/nvidia3'),
    ).toBe(true);
    // The harness keeps only what it needs to jail each engine child; the child gets none of it.
    expect(args.filter((a, i) => args[i - 1] === '--cap-add').sort()).toEqual([...JAIL_CAPS].sort());
    expect(args.slice(-4)).toEqual(['--', 'python3', '-m', 'harness']);
  });

  it('refuses a read-only path that is the root or holds a forbidden one (the checkout under /tmp, say)', () => {
    expect(() => bwrapArgs({ ...plan, readOnly: ['/'] })).toThrow(SandboxPlanError);
    expect(() => bwrapArgs({ ...plan, readOnly: [`${base}/agent`] })).toThrow(/holds .*agent\/work/);
    expect(() => bwrapArgs({ ...plan, readOnly: ['/tmp'] })).toThrow(/holds \/tmp/);
  });
});
