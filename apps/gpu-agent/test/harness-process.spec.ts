import { readFileSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { HarnessProcess } from '../src/harness-process';
import type { Launch } from '../src/harness-process';

/** A tiny real child: the process is the point of these tests. */
const sh = (script: string): Launch => ({
  file: '/bin/sh',
  args: ['-c', script],
  cwd: '/',
  env: { PATH: '/usr/bin:/bin' },
});

/** Gone: no such process, or only a zombie waiting for its reaper. */
function gone(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2)[0] === 'Z';
  } catch {
    return true;
  }
}

async function eventually(check: () => boolean, ms = 3_000): Promise<boolean> {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) return false;
    await new Promise((r) => setTimeout(r, 20));
  }
  return true;
}

describe('HarnessProcess: spawn, stop (TERM, grace, KILL), clean up', () => {
  const started: HarnessProcess[] = [];
  const make = (graceMs: number) => {
    const notes: string[] = [];
    const p = new HarnessProcess(graceMs, (t) => notes.push(t));
    started.push(p);
    return { p, notes };
  };
  afterEach(() => {
    for (const p of started.splice(0)) {
      p.stop('test over');
      p.dispose();
    }
  });

  it("passes the terminal's output on and resolves with the exit code", async () => {
    const { p, notes } = make(1_000);
    let out = '';
    const code = await p.run(sh('echo hello; exit 3'), (d) => (out += d));
    expect(code).toBe(3);
    expect(out).toMatch(/^hello\r?\n/);
    expect(notes).toEqual([]);
  });

  it('a stop asked for before the start applies the moment the process exists', async () => {
    const { p, notes } = make(5_000);
    p.stop('canceled while preparing');
    p.stop('a second reason');
    const t0 = Date.now();
    const code = await p.run(sh('sleep 30'), () => undefined);
    expect(code).toBeNull(); // ended by the signal, well before the sleep
    expect(Date.now() - t0).toBeLessThan(4_000);
    expect(notes).toEqual(['stopping: canceled while preparing']);
  });

  it('TERM first; a tree that ignores it is killed after the grace; a second stop changes nothing', async () => {
    const { p, notes } = make(400);
    let out = '';
    const ended = p.run(sh('trap "" TERM; echo ready; while :; do sleep 0.05; done'), (d) => (out += d));
    expect(await eventually(() => out.includes('ready'))).toBe(true);
    const t0 = Date.now();
    p.stop('canceled by the owner');
    p.stop('canceled by the owner');
    p.stop('the agent is shutting down');
    expect(await ended).toBeNull();
    expect(Date.now() - t0).toBeGreaterThanOrEqual(350);
    expect(notes).toEqual([
      'stopping: canceled by the owner',
      'still running after the grace period: killing',
    ]);
  });

  it('a process that obeys TERM ends within the grace and is not reported as killed', async () => {
    const { p, notes } = make(300);
    let out = '';
    const ended = p.run(sh('echo ready; exec sleep 30'), (d) => (out += d));
    expect(await eventually(() => out.includes('ready'))).toBe(true);
    p.stop('deadline');
    expect(await ended).toBeNull();
    await new Promise((r) => setTimeout(r, 450)); // past the grace: the KILL finds nothing alive
    expect(notes).toEqual(['stopping: deadline']);
  });

  it('kills what the process left behind in its group when it exits by itself', async () => {
    const { p } = make(1_000);
    let out = '';
    // The child ignores the hangup the closing terminal sends: only the agent's KILL of the group ends it.
    const code = await p.run(
      sh('(trap "" HUP; exec sleep 30) & echo "left $!"; sleep 0.3; exit 0'),
      (d) => (out += d),
    );
    expect(code).toBe(0);
    const left = Number(/left (\d+)/.exec(out)?.[1]);
    expect(left).toBeGreaterThan(0);
    expect(await eventually(() => gone(left))).toBe(true);
  });
});
