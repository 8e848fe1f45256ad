import * as pty from 'node-pty';
import { alive, signalTree } from './process-tree';

/** What to start: the program, its arguments, folder and whole environment. */
export interface Launch {
  file: string;
  args: string[];
  cwd: string;
  env: Record<string, string>;
}

/**
 * The harness's process (in the sandbox, bubblewrap is its leader) under a pty, so its output comes
 * as a terminal shows it, unbuffered. Stopping is idempotent and may come at any time, also before
 * the start (then it applies the moment the process exists): SIGTERM to the whole tree, then SIGKILL
 * after the grace for whatever still runs. Whatever way it ends, the tree is killed, so nothing of it
 * outlives the run.
 */
export class HarnessProcess {
  private proc?: pty.IPty;
  private killTimer?: NodeJS.Timeout;
  /** A stop asked for before the process existed. */
  private pendingStop: string | null = null;

  constructor(
    private readonly graceMs: number,
    /** A line for the run's log (stream `agent`). */
    private readonly note: (text: string) => void,
  ) {}

  get pid(): number | undefined {
    return this.proc?.pid;
  }

  /** Starts it, sends its output to `onData`, resolves with its exit code (null when a signal ended it). */
  async run(launch: Launch, onData: (data: string) => void): Promise<number | null> {
    const proc = pty.spawn(launch.file, launch.args, {
      name: 'dumb',
      cols: 200,
      rows: 50,
      cwd: launch.cwd,
      env: launch.env,
    });
    this.proc = proc;
    if (this.pendingStop !== null) this.stop(this.pendingStop);
    proc.onData(onData);
    const exit = await new Promise<{ exitCode: number; signal?: number }>((resolve) => proc.onExit(resolve));
    // The tree outlives its leader only in insecure mode (in the sandbox the pid namespace dies with it).
    signalTree(proc.pid, 'SIGKILL');
    return exit.signal ? null : exit.exitCode;
  }

  /** TERM to the tree, the grace, KILL. Idempotent: a second stop neither signals nor re-arms. */
  stop(message: string): void {
    const proc = this.proc;
    if (!proc) {
      this.pendingStop ??= message;
      return;
    }
    if (this.killTimer) return;
    this.note(`stopping: ${message}`);
    signalTree(proc.pid, 'SIGTERM');
    this.killTimer = setTimeout(() => {
      if (alive(proc.pid)) this.note('still running after the grace period: killing');
      signalTree(proc.pid, 'SIGKILL');
    }, this.graceMs);
  }

  /** The run is over: no KILL left pending. */
  dispose(): void {
    if (this.killTimer) clearTimeout(this.killTimer);
  }
}
