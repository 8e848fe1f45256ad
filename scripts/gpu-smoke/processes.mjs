// The hub and the agent gpu-smoke starts: each a Node child with its log in a file of its own.
import { spawn } from 'node:child_process';
import { appendFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import path from 'node:path';

export function freePort() {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

export class Processes {
  /** @param {{ root: string, logDir: string }} o */
  constructor(o) {
    this.root = o.root;
    this.logDir = o.logDir;
    this.procs = [];
  }

  /** Starts `node ARGS` with env; its stdout and stderr go to LOGDIR/NAME.log. */
  start(name, args, env) {
    const child = spawn(process.execPath, args, { cwd: this.root, env, stdio: ['ignore', 'pipe', 'pipe'] });
    const logFile = path.join(this.logDir, `${name}.log`);
    writeFileSync(logFile, '');
    const keep = (c) => appendFileSync(logFile, c);
    child.stdout.on('data', keep);
    child.stderr.on('data', keep);
    const exited = new Promise((r) => child.once('exit', (code, sig) => r(sig ?? code)));
    const p = { name, child, exited, logFile };
    this.procs.push(p);
    return p;
  }

  /** SIGTERM to each, the last started first; SIGKILL after 15 s. */
  async stopAll() {
    for (const p of [...this.procs].reverse()) {
      if (p.child.exitCode !== null || p.child.signalCode !== null) continue;
      p.child.kill('SIGTERM');
      const t = setTimeout(() => p.child.kill('SIGKILL'), 15_000);
      await p.exited;
      clearTimeout(t);
    }
  }
}
