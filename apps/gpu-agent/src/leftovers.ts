import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

/**
 * What an agent process leaves on disk while it runs: a folder per run under `<workDir>/runs/`
 * (the team's unpacked engine, the spec) and a short-named folder in /tmp for the harness's event
 * socket. A process that ends normally wipes both; one that is killed (`kill -9`, out of memory,
 * power) cannot, so the next process on the same work folder removes them before taking work.
 */

/** Where the event-socket folders go (short paths: a Unix socket path is limited to 108 bytes). */
export function tempRoot(): string {
  return existsSync('/tmp') ? '/tmp' : os.tmpdir();
}

/** The name prefix of this work folder's temporary folders, so an agent only ever cleans its own. */
export function tempPrefix(workDir: string): string {
  return `dryft-ev-${createHash('sha256').update(path.resolve(workDir)).digest('hex').slice(0, 10)}-`;
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * One agent process per work folder (`<workDir>/agent.pid`): a second one would wipe the first's
 * runs. A pid file whose process is gone (or is no agent) is taken over.
 */
export function claimWorkDir(workDir: string): void {
  const file = path.join(workDir, 'agent.pid');
  if (existsSync(file)) {
    const pid = Number(readFileSync(file, 'utf8').trim());
    if (Number.isInteger(pid) && pid > 0 && pid !== process.pid && alive(pid)) {
      let cmdline = '';
      try {
        cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' ');
      } catch {
        /* not readable: assume it is not an agent */
      }
      if (/gpu-agent|dryft-agent/.test(cmdline))
        throw new Error(
          `another agent (process ${pid}) is using the work folder ${workDir}; stop it, or give this one its own workDir`,
        );
    }
  }
  writeFileSync(file, `${process.pid}\n`, { mode: 0o600 });
}

/** Removes what a previous process on this work folder left; returns what it removed. */
export function cleanLeftovers(workDir: string, log: (m: string) => void): string[] {
  const removed: string[] = [];
  const runs = path.join(workDir, 'runs');
  if (existsSync(runs)) for (const entry of readdirSync(runs)) removed.push(path.join(runs, entry));
  const prefix = tempPrefix(workDir);
  const tmp = tempRoot();
  for (const entry of readdirSync(tmp)) if (entry.startsWith(prefix)) removed.push(path.join(tmp, entry));
  for (const p of removed) rmSync(p, { recursive: true, force: true });
  if (removed.length)
    log(
      `removed ${removed.length} folder(s) a previous agent process left behind (killed mid-run?): ${removed.join(', ')}`,
    );
  return removed;
}
