import { HarnessChildEvent, HarnessEvent } from '@dryft/libs';
import type { HarnessResultEvent, HarnessSpec, RunAssign, RunFinished } from '@dryft/libs';
import { validateArchive } from '@dryft/libs/node';
import * as pty from 'node-pty';
import { createHash } from 'node:crypto';
import { promises as fs, realpathSync } from 'node:fs';
import * as net from 'node:net';
import * as path from 'node:path';
import * as os from 'node:os';
import type { AgentConfig } from './config';
import { formatRuntime, pickPython } from './config';
import { tempPrefix, tempRoot } from './leftovers';
import { Outbox } from './outbox';
import { alive, signalTree } from './process-tree';
import {
  BWRAP,
  bwrapArgs,
  interpreterPaths,
  isSystemPath,
  SANDBOX_PRIVATE,
  SANDBOX_WORKSPACE,
  unreadableByEngine,
} from './sandbox';

/**
 * The machine default for an engine's memory where the definition sets none (CPU runs: the jail's
 * RLIMIT_DATA): half the host's memory shared among the slots.
 */
export function defaultMemoryBytes(slots: number): number {
  return Math.floor(os.totalmem() / 2 / Math.max(1, slots));
}

/** The fd number the harness writes its events to, inside the process (see events-wrapper.py). */
export const EVENTS_FD = 3;
const WRAPPER = path.resolve(__dirname, '..', 'assets', 'events-wrapper.py');

export type StopReason = 'cancel' | 'deadline' | 'shutdown' | 'lost';

export interface RunHost {
  config: AgentConfig;
  sandboxed: boolean;
  /** The versions the agent reported (GPU agents), repeated in each run's log. */
  runtime?: Record<string, string>;
  connected(): boolean;
  sendBatch: ConstructorParameters<typeof Outbox>[1];
  started(runId: string): Promise<void>;
  finished(msg: RunFinished): Promise<void>;
  handback(runId: string, reason: string): Promise<boolean>;
  log(message: string): void;
}

type Phase = 'preparing' | 'running' | 'finishing' | 'done';

const result = (
  status: 'failed',
  failureCode: HarnessResultEvent['failureCode'],
  message: string,
): HarnessResultEvent => ({
  type: 'result',
  status,
  failureCode,
  message,
  score: null,
  workloads: [],
  metrics: {},
});

/**
 * The verdict the agent reports for a run (null: the server ended it and already has the final
 * state). Why it stopped decides first (a cancel, the whole-run deadline, the agent's shutdown);
 * otherwise the harness's own verdict, or the preparation's failure; a harness that ended without
 * one is the engine's fault only if the engine's code was running then, else the evaluator's.
 */
export function verdictFor(o: {
  stopReason: StopReason | null;
  stopMessage: string;
  preparationFailure: HarnessResultEvent | null;
  harnessResult: HarnessResultEvent | null;
  untrustedRunning: boolean;
  exitCode: number | null;
}): { verdict: HarnessResultEvent; canceled: boolean } | null {
  if (o.stopReason === 'lost') return null;
  let verdict: HarnessResultEvent;
  let canceled = false;
  switch (o.stopReason) {
    case 'cancel':
      canceled = true;
      verdict = result('failed', null, `Canceled: ${o.stopMessage}`);
      break;
    case 'deadline':
      verdict = result(
        'failed',
        'timeout',
        "The run exceeded the organizer's whole-run time limit and was stopped.",
      );
      break;
    case 'shutdown':
      verdict = result(
        'failed',
        'infra_error',
        "The GPU agent was shut down during the run. This is not your engine's fault; retry once.",
      );
      break;
    default:
      verdict =
        o.preparationFailure ??
        o.harnessResult ??
        (o.untrustedRunning
          ? // The trusted side died while the submission's code ran (and only then): the engine
            // is held responsible, as for any other way it makes the evaluation impossible.
            result(
              'failed',
              'candidate_error',
              `The evaluator was ended while your engine was running (exit ${o.exitCode ?? 'by signal'}), without a verdict: your engine is held responsible (it may have exhausted the machine's memory or attacked the evaluator).`,
            )
          : result(
              'failed',
              'harness_error',
              `The evaluator ended without a verdict (exit ${o.exitCode ?? 'by signal'}); retry once and report it if it persists.`,
            ));
  }
  return { verdict, canceled };
}

/**
 * One run on one slot, the CI-runner way: fetch the submission with the one-time URL and check its
 * sha256; unpack it into a fresh workspace; write the spec beside it, outside the workspace; start the
 * harness under node-pty inside bubblewrap; stream its output and its events; enforce the deadline;
 * report the verdict until the server acknowledges it; wipe everything it wrote, always.
 *
 * The events channel: node-pty gives the process only the terminal, so the harness's `--events-fd`
 * is made by a tiny trusted wrapper (assets/events-wrapper.py) that connects to a Unix socket the
 * agent listens on in the run's private folder, puts the connection on fd 3 and execs the harness.
 * The agent accepts exactly one connection and closes the listener at once, so the submission (which
 * the harness runs without that fd) cannot open a second channel; a socket rather than a FIFO means
 * nothing can be written into the channel by reopening a path.
 */
export class RunExecutor {
  readonly outbox: Outbox;
  phase: Phase = 'preparing';
  private stopReason: StopReason | null = null;
  private stopMessage = '';
  private deadlineTimer?: NodeJS.Timeout;
  private killTimer?: NodeJS.Timeout;
  private proc?: pty.IPty;
  private events?: net.Server;
  private harnessResult: HarnessResultEvent | null = null;
  /** The candidate's (or training) child was running when the harness last said anything. */
  private untrustedRunning = false;
  private partial = '';
  /** Inside an over-long line that was already sent cut: its rest is skipped. */
  private cutLine = false;
  readonly done: Promise<void>;
  private resolveDone!: () => void;
  private readonly runDir: string;
  private readonly cleanup: (() => Promise<unknown>)[] = [];

  constructor(
    readonly assign: RunAssign,
    private readonly host: RunHost,
    private readonly gpus: string[],
  ) {
    this.runDir = path.join(host.config.workDir, 'runs', assign.runId);
    this.outbox = new Outbox(
      assign.runId,
      host.sendBatch,
      host.connected,
      () => this.stop('lost', 'the server ended this run'),
      host.config.batchIntervalMs,
      host.log,
      assign.logs,
    );
    this.done = new Promise((r) => (this.resolveDone = r));
  }

  get runId(): string {
    return this.assign.runId;
  }

  get started(): boolean {
    return this.phase !== 'preparing';
  }

  /** Runs it to the end; never throws (every failure becomes a verdict). */
  async execute(): Promise<void> {
    this.setDeadline(this.assign.deadlineAt);
    try {
      const prepared = await this.prepare().catch((err: Error) => {
        this.note(`could not prepare the run: ${err.message}`);
        return null;
      });
      if (this.stopReason === 'shutdown' && !this.started) {
        if (await this.host.handback(this.runId, 'the agent is shutting down')) return;
      }
      let exitCode: number | null = null;
      let startFailure: HarnessResultEvent | null = null;
      if (prepared && !this.stopReason) {
        await this.host.started(this.runId).catch(() => undefined);
        this.phase = 'running';
        // The sandbox may be refused (a mount that holds the hub's data, say): a verdict, not a hang.
        exitCode = await this.runHarness(prepared).catch((err: Error) => {
          this.note(`could not start the evaluator: ${err.message}`);
          startFailure = result(
            'failed',
            'infra_error',
            `The GPU agent could not start the evaluator: ${err.message}`,
          );
          return null;
        });
      }
      this.phase = 'finishing';
      this.flushPartial();
      this.outbox.endOfLog();
      this.outbox.cut();
      await this.report(
        prepared === null && !this.stopReason
          ? result('failed', 'infra_error', 'The GPU agent could not prepare this run; retry once.')
          : startFailure,
        exitCode,
      );
    } catch (err) {
      this.host.log(`run ${this.runId}: ${(err as Error).stack ?? err}`);
    } finally {
      this.phase = 'done';
      if (this.deadlineTimer) clearTimeout(this.deadlineTimer);
      if (this.killTimer) clearTimeout(this.killTimer);
      this.outbox.close();
      for (const c of this.cleanup) await c().catch(() => undefined);
      await fs
        .rm(this.runDir, { recursive: true, force: true })
        .catch((e: Error) => this.host.log(`could not wipe ${this.runDir}: ${e.message}`));
      this.resolveDone();
    }
  }

  /** Cancel, deadline, shutdown or "no longer yours": TERM to the tree, grace, KILL. Idempotent. */
  stop(reason: StopReason, message: string): void {
    if (this.phase === 'done') return;
    if (!this.stopReason) {
      this.stopReason = reason;
      this.stopMessage = message;
    }
    const proc = this.proc;
    if (!proc || this.killTimer) return;
    this.note(`stopping: ${message}`);
    signalTree(proc.pid, 'SIGTERM');
    this.killTimer = setTimeout(() => {
      if (alive(proc.pid)) this.note('still running after the grace period: killing');
      signalTree(proc.pid, 'SIGKILL');
    }, this.host.config.cancelGraceMs);
  }

  setDeadline(deadlineAt: number): void {
    if (this.deadlineTimer) clearTimeout(this.deadlineTimer);
    const ms = Math.max(0, deadlineAt - Date.now());
    // Timers hold 32-bit milliseconds; a far deadline is re-armed on the way.
    this.deadlineTimer = setTimeout(
      () => {
        if (Date.now() >= deadlineAt)
          this.stop('deadline', "the run reached the organizer's whole-run time limit");
        else this.setDeadline(deadlineAt);
      },
      Math.min(ms, 2 ** 31 - 1),
    );
  }

  private note(text: string): void {
    this.outbox.line('agent', text);
  }

  private async prepare(): Promise<{
    workspace: string;
    privateDir: string;
    specPath: string;
    spec: HarnessSpec;
  }> {
    await fs.rm(this.runDir, { recursive: true, force: true });
    const workspace = path.join(this.runDir, 'workspace');
    const privateDir = path.join(this.runDir, 'private');
    await fs.mkdir(workspace, { recursive: true, mode: 0o700 });
    await fs.mkdir(privateDir, { recursive: true, mode: 0o700 });
    this.note(
      `preparing run ${this.runId} (${this.assign.benchmarkId}, ${this.assign.mode}) on slot ${this.assign.slot}`,
    );

    const submission = this.assign.submission;
    // A baseline re-measure has no submission: the harness times only its trusted baseline engine
    // and gets the empty workspace.
    if (submission) await this.fetchSubmission(submission, workspace);
    else this.note('baseline re-measure: no submission to fetch');
    if (this.host.runtime) this.note(`runtime: ${formatRuntime(this.host.runtime)}`);

    const spec = this.localSpec(this.assign.spec);
    const specPath = path.join(privateDir, 'spec.json');
    await fs.writeFile(specPath, JSON.stringify(spec), { mode: 0o600 });
    return {
      workspace: realpathSync(workspace),
      privateDir: realpathSync(privateDir),
      specPath: path.join(realpathSync(privateDir), 'spec.json'),
      spec,
    };
  }

  /** Fetches the submission with the one-time URL, checks its sha256 and unpacks it into the workspace. */
  private async fetchSubmission(
    submission: NonNullable<RunAssign['submission']>,
    workspace: string,
  ): Promise<void> {
    const { config } = this.host;
    const url = new URL(submission.url, config.apiUrl);
    const res = await fetch(url, { headers: { 'X-Agent-Token': config.token } });
    if (!res.ok) throw new Error(`download failed: HTTP ${res.status} ${(await res.text()).slice(0, 200)}`);
    const bytes = Buffer.from(await res.arrayBuffer());
    const sha = createHash('sha256').update(bytes).digest('hex');
    if (sha !== submission.sha256)
      throw new Error(`the download's sha256 ${sha} is not the submission's ${submission.sha256}`);

    if (submission.kind === 'archive') {
      const verdict = await validateArchive(bytes);
      if (!verdict.ok || !verdict.files) {
        const problems = verdict.verdicts
          .flatMap((v) => v.problems)
          .slice(0, 5)
          .join('; ');
        throw new Error(`the archive fails the archive rules: ${problems}`);
      }
      for (const file of verdict.files) {
        const target = path.resolve(workspace, file.path);
        if (!target.startsWith(workspace + path.sep))
          throw new Error(`archive path escapes the workspace: ${file.path}`);
        await fs.mkdir(path.dirname(target), { recursive: true });
        await fs.writeFile(target, file.content, { flag: 'wx' });
      }
      this.note(`unpacked ${verdict.files.length} files`);
    } else {
      await fs.writeFile(path.join(workspace, 'submission.py'), bytes, { flag: 'wx' });
    }
  }

  /** The spec with this box's paths: the agent's model map, the checkout's baseline engine. */
  private localSpec(spec: HarnessSpec): HarnessSpec {
    if (spec.kind !== 'decode') return spec;
    const { config } = this.host;
    const modelPath = config.models[spec.benchmark] ?? path.resolve(config.repoDir, spec.model.path);
    return {
      ...spec,
      model: { ...spec.model, path: modelPath },
      baselineEngine: path.resolve(config.repoDir, spec.baselineEngine),
    };
  }

  private python(spec: HarnessSpec): string {
    const needsTorch = !(spec.kind === 'decode' && spec.model.family === 'toy');
    return pickPython(this.host.config.harness.python, needsTorch ? ['torch'] : []);
  }

  private async runHarness(p: {
    workspace: string;
    privateDir: string;
    specPath: string;
    spec: HarnessSpec;
  }): Promise<number | null> {
    const { config } = this.host;
    const python = this.python(p.spec);
    // Unix socket paths are limited to 108 bytes and the work dir may be deep: the socket lives in a
    // short private folder of its own, bound read-only into the sandbox at the same path.
    const socketDir = await fs.mkdtemp(path.join(tempRoot(), tempPrefix(config.workDir)));
    this.cleanup.push(() => fs.rm(socketDir, { recursive: true, force: true }));
    await fs.chmod(socketDir, 0o700);
    const socketPath = path.join(socketDir, 'e.sock');
    const eventsDone = this.listenForEvents(socketPath);
    // Inside the sandbox the run's folders sit at fixed paths: nothing of the host's layout shows.
    const inside = this.host.sandboxed
      ? { workspace: SANDBOX_WORKSPACE, privateDir: SANDBOX_PRIVATE }
      : { workspace: p.workspace, privateDir: p.privateDir };
    const vars: Record<string, string> = {
      python,
      benchmark: this.assign.benchmarkId,
      submission: inside.workspace,
      mode: this.assign.mode,
      spec: path.join(inside.privateDir, path.basename(p.specPath)),
      eventsFd: String(EVENTS_FD),
    };
    const harnessCmd = (
      config.harness.command ?? [
        '{python}',
        '-m',
        'harness',
        'run',
        '--benchmark',
        '{benchmark}',
        '--submission',
        '{submission}',
        '--mode',
        '{mode}',
        '--spec',
        '{spec}',
        '--consume-spec',
        '--events-fd',
        '{eventsFd}',
      ]
    ).map((a) => a.replace(/\{(\w+)\}/g, (m, k: string) => vars[k] ?? m));
    await fs.copyFile(WRAPPER, path.join(p.privateDir, 'events-wrapper.py'));
    const wrapperCopy = path.join(inside.privateDir, 'events-wrapper.py');
    const command = [python, '-I', wrapperCopy, socketPath, String(EVENTS_FD), ...harnessCmd];
    const env: Record<string, string> = {
      PATH: '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin',
      // The harness's own HOME: writable (its /tmp); each engine child gets its workspace as HOME.
      HOME: this.host.sandboxed ? '/tmp' : inside.workspace,
      TMPDIR: '/tmp',
      LANG: 'C.UTF-8',
      PYTHONPATH: config.harness.dir!,
      PYTHONDONTWRITEBYTECODE: '1',
      PYTHONUNBUFFERED: '1',
      TERM: 'dumb',
    };
    let file: string;
    let args: string[];
    if (this.host.sandboxed) {
      file = BWRAP;
      const limits = config.limits;
      // The engine child's own sandbox (harness/harness/jail.py): a uid of its own per slot (never 0).
      Object.assign(env, {
        DRYFT_JAIL: '1',
        DRYFT_JAIL_UID: String(config.sandboxUidBase + 4 * this.assign.slot),
        DRYFT_JAIL_NPROC: String(limits.processes),
        DRYFT_JAIL_NOFILE: String(limits.openFiles),
        DRYFT_JAIL_MEMORY: String(limits.memoryBytes ?? defaultMemoryBytes(config.slots.length)),
        DRYFT_JAIL_WORKSPACE_BYTES: String(limits.workspaceBytes),
        USER: 'dryft',
        LOGNAME: 'dryft',
      });
      const readOnly = [...interpreterPaths(python), config.harness.dir!, socketDir];
      // The harness starts each engine child in a nested bubblewrap: the same binary, which a box
      // without the Debian package may keep outside /usr (the gpu-smoke pack's bin/bwrap).
      const bwrapReal = realpathSync(BWRAP);
      if (!isSystemPath(bwrapReal)) readOnly.push(bwrapReal);
      env.DRYFT_JAIL_BWRAP = bwrapReal;
      if (p.spec.kind === 'decode') readOnly.push(p.spec.model.path, p.spec.baselineEngine);
      args = bwrapArgs({
        workspace: p.workspace,
        privateDir: p.privateDir,
        readOnly,
        gpus: this.gpus,
        forbidden: [
          config.workDir,
          path.join(config.repoDir, '.data'),
          '/tmp',
          '/var/tmp',
          '/run',
          '/home',
          '/root',
          '/var/lib/postgresql',
          '/var/lib/redis',
          ...[config.configFile, config.tokenFile].filter((f): f is string => Boolean(f)),
          ...config.hidePaths,
        ],
        tmpBytes: 256 * 1024 * 1024,
        env,
        command,
      });
      // After the mount plan passed (a model setting of / or the checkout is refused for that first).
      if (p.spec.kind === 'decode') {
        const bad = unreadableByEngine(p.spec.model.path);
        if (bad.length)
          throw new Error(
            `the engine runs as its own uid (${config.sandboxUidBase + 4 * this.assign.slot}+) and cannot read the model: ${bad.slice(0, 5).join(', ')}${bad.length > 5 ? ` and ${bad.length - 5} more` : ''}; the operator must run \`chmod -R a+rX ${p.spec.model.path}\``,
          );
      }
    } else {
      // Development only (--insecure-no-sandbox): the slot's GPUs by CUDA_VISIBLE_DEVICES, nothing more.
      file = command[0];
      args = command.slice(1);
      if (this.gpus.length) env.CUDA_VISIBLE_DEVICES = this.gpus.join(',');
    }
    const proc = pty.spawn(file, args, { name: 'dumb', cols: 200, rows: 50, cwd: p.workspace, env });
    this.proc = proc;
    if (this.stopReason) this.stop(this.stopReason, this.stopMessage);
    proc.onData((data) => this.onOutput(data));
    const exit = await new Promise<{ exitCode: number; signal?: number }>((resolve) => proc.onExit(resolve));
    // The tree outlives its leader only in insecure mode (in the sandbox the pid namespace dies with it).
    signalTree(proc.pid, 'SIGKILL');
    await Promise.race([eventsDone, new Promise((r) => setTimeout(r, 2_000))]);
    this.events?.close();
    return exit.signal ? null : exit.exitCode;
  }

  private listenForEvents(socketPath: string): Promise<void> {
    return new Promise((resolve) => {
      let buffered = '';
      const server = net.createServer({ pauseOnConnect: false }, (conn) => {
        // Exactly one connection: the wrapper's. Close the door behind it.
        server.close();
        conn.setEncoding('utf8');
        conn.on('data', (chunk: string) => {
          buffered += chunk;
          let nl: number;
          while ((nl = buffered.indexOf('\n')) >= 0) {
            this.onEventLine(buffered.slice(0, nl));
            buffered = buffered.slice(nl + 1);
          }
        });
        conn.on('end', () => {
          if (buffered.trim()) this.onEventLine(buffered);
          resolve();
        });
        conn.on('error', () => resolve());
      });
      server.on('error', (err) => {
        this.note(`events channel failed: ${err.message}`);
        resolve();
      });
      server.listen(socketPath);
      this.events = server;
    });
  }

  private onEventLine(line: string): void {
    if (!line.trim()) return;
    let json: unknown;
    try {
      json = JSON.parse(line);
    } catch {
      this.note('ignored a harness event that is not JSON');
      return;
    }
    const child = HarnessChildEvent.safeParse(json);
    if (child.success) {
      // Kept here, never forwarded: who is blamed if the harness dies without a verdict.
      if (child.data.role !== 'baseline') this.untrustedRunning = child.data.state === 'started';
      return;
    }
    const parsed = HarnessEvent.safeParse(json);
    if (!parsed.success) {
      this.note(`ignored a malformed harness event: ${parsed.error.issues[0]?.message ?? ''}`);
      return;
    }
    const event = parsed.data;
    if (event.type === 'log')
      this.outbox.line(
        'harness',
        event.level === 'info' ? event.message : `${event.level}: ${event.message}`,
      );
    else if (event.type === 'result') this.harnessResult = event;
    else this.outbox.event(event);
  }

  private onOutput(data: string): void {
    const text = this.partial + data;
    const parts = text.split('\n');
    this.partial = parts.pop() ?? '';
    for (const part of parts) {
      // The rest of a line already sent cut (over the cap per line) is dropped.
      if (this.cutLine) this.cutLine = false;
      else this.outbox.line('out', part.replace(/\r$/, ''));
    }
    if (this.partial.length > 16_384) {
      // An over-long line: sent now, cut with a marker, and the rest of it skipped until its newline.
      if (!this.cutLine) this.outbox.line('out', this.partial);
      this.cutLine = true;
      this.partial = '';
    }
  }

  private flushPartial(): void {
    if (this.partial && !this.cutLine) this.outbox.line('out', this.partial.replace(/\r$/, ''));
    this.partial = '';
    this.cutLine = false;
  }

  /** The verdict, resent until the server acknowledges it (the host retries across reconnects). */
  private async report(
    preparationFailure: HarnessResultEvent | null,
    exitCode: number | null,
  ): Promise<void> {
    const decided = verdictFor({
      stopReason: this.stopReason,
      stopMessage: this.stopMessage,
      preparationFailure,
      harnessResult: this.harnessResult,
      untrustedRunning: this.untrustedRunning,
      exitCode,
    });
    if (!decided) return; // the server already has the final state
    const { verdict, canceled } = decided;
    await this.outbox.drained();
    await this.host.finished({
      runId: this.runId,
      lastSeq: this.outbox.lastSeq,
      result: verdict,
      canceled,
      exitCode,
    });
  }
}
