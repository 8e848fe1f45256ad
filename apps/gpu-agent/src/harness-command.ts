import type { HarnessSpec, RunAssign } from '@dryft/libs';
import { promises as fs, realpathSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { AgentConfig } from './config';
import { pickPython } from './config';
import type { Launch } from './harness-process';
import type { PreparedRun } from './run-workspace';
import {
  BWRAP,
  bwrapArgs,
  interpreterPaths,
  isSystemPath,
  SANDBOX_COMPILE_CACHE,
  SANDBOX_COMPILE_WORK,
  SANDBOX_PRIVATE,
  SANDBOX_WORKSPACE,
  unreadableByEngine,
} from './sandbox';

/** The fd number the harness writes its events to, inside the process (see events-wrapper.py). */
export const EVENTS_FD = 3;
const WRAPPER = path.resolve(__dirname, '..', 'assets', 'events-wrapper.py');

/**
 * The machine default for an engine's memory where the definition sets none (CPU runs: the jail's
 * RLIMIT_DATA): half the host's memory shared among the slots.
 */
export function defaultMemoryBytes(slots: number): number {
  return Math.floor(os.totalmem() / 2 / Math.max(1, slots));
}

/** The interpreter a run needs: one with torch, except for the pure-Python toy model. */
function pythonFor(spec: HarnessSpec, configured: string | undefined): string {
  const needsTorch = !(spec.kind === 'decode' && spec.model.family === 'toy');
  return pickPython(configured, needsTorch ? ['torch'] : []);
}

/**
 * What the agent starts for one run: the events wrapper (copied beside the spec, outside the
 * workspace) exec'ing `python -m harness run …` (or the configured command), with a clean
 * environment; sandboxed, inside bubblewrap with the slot's GPUs, the run's folders at fixed paths,
 * the interpreter, harness and model read-only, and the hub's secrets and data out of sight.
 * Throws where the sandbox cannot be planned or the jailed engine could not read the model.
 */
export async function harnessLaunch(o: {
  config: AgentConfig;
  sandboxed: boolean;
  gpus: string[];
  assign: RunAssign;
  prepared: PreparedRun;
  /** The events channel's folder and socket (see harness-events.ts). */
  socketDir: string;
  socketPath: string;
  /** The candidate's persistent compile cache (compile-cache.ts), sandboxed runs only; null: none. */
  compileCache?: string | null;
}): Promise<Launch> {
  const { config, prepared: p, assign } = o;
  const python = pythonFor(p.spec, config.harness.python);
  // Inside the sandbox the run's folders sit at fixed paths: nothing of the host's layout shows.
  const inside = o.sandboxed
    ? { workspace: SANDBOX_WORKSPACE, privateDir: SANDBOX_PRIVATE }
    : { workspace: p.workspace, privateDir: p.privateDir };
  const vars: Record<string, string> = {
    python,
    benchmark: assign.benchmarkId,
    submission: inside.workspace,
    mode: assign.mode,
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
  const command = [python, '-I', wrapperCopy, o.socketPath, String(EVENTS_FD), ...harnessCmd];
  const env: Record<string, string> = {
    PATH: '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin',
    // The harness's own HOME: writable (its /tmp); each engine child gets its workspace as HOME.
    HOME: o.sandboxed ? '/tmp' : inside.workspace,
    TMPDIR: '/tmp',
    LANG: 'C.UTF-8',
    PYTHONPATH: config.harness.dir!,
    PYTHONDONTWRITEBYTECODE: '1',
    PYTHONUNBUFFERED: '1',
    TERM: 'dumb',
  };
  const cpus = config.slots.find((s) => s.index === assign.slot)?.cpus;
  if (cpus) env.DRYFT_ENGINE_CPUS = cpus;
  if (!o.sandboxed) {
    // Development only (--insecure-no-sandbox): the slot's GPUs by CUDA_VISIBLE_DEVICES, nothing more.
    if (o.gpus.length) env.CUDA_VISIBLE_DEVICES = o.gpus.join(',');
    return { file: command[0], args: command.slice(1), cwd: p.workspace, env };
  }
  const limits = config.limits;
  // The engine child's own sandbox (harness/harness/jail.py): a uid of its own per slot (never 0).
  const uid = config.sandboxUidBase + 4 * assign.slot;
  Object.assign(env, {
    DRYFT_JAIL: '1',
    DRYFT_JAIL_UID: String(uid),
    DRYFT_JAIL_NPROC: String(limits.processes),
    DRYFT_JAIL_NOFILE: String(limits.openFiles),
    DRYFT_JAIL_MEMORY: String(limits.memoryBytes ?? defaultMemoryBytes(config.slots.length)),
    DRYFT_JAIL_WORKSPACE_BYTES: String(limits.workspaceBytes),
    USER: 'dryft',
    LOGNAME: 'dryft',
  });
  // The harness copies the team's saved cache into the work tmpfs, binds that into the candidate's
  // jail alone and saves it back after the run (harness/harness/compile_cache.py); DRYFT_JAIL_*
  // never reaches an engine's environment.
  if (o.compileCache) {
    env.DRYFT_JAIL_COMPILE_CACHE = SANDBOX_COMPILE_CACHE;
    env.DRYFT_JAIL_COMPILE_WORK = SANDBOX_COMPILE_WORK;
  }
  const readOnly = [...interpreterPaths(python), config.harness.dir!, o.socketDir];
  // The harness starts each engine child in a nested bubblewrap: the same binary, which a box
  // without the Debian package may keep outside /usr (the gpu-smoke pack's bin/bwrap).
  const bwrapReal = realpathSync(BWRAP);
  if (!isSystemPath(bwrapReal)) readOnly.push(bwrapReal);
  env.DRYFT_JAIL_BWRAP = bwrapReal;
  if (p.spec.kind === 'decode') readOnly.push(p.spec.model.path, p.spec.baselineEngine);
  const args = bwrapArgs({
    workspace: p.workspace,
    privateDir: p.privateDir,
    // The run's copy is bounded like the engine's /tmp: it cannot fill the agent's disk mid-run.
    compileCache: o.compileCache ? { dir: o.compileCache, bytes: limits.workspaceBytes } : null,
    readOnly,
    gpus: o.gpus,
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
        `the engine runs as its own uid (${uid}+) and cannot read the model: ${bad.slice(0, 5).join(', ')}${bad.length > 5 ? ` and ${bad.length - 5} more` : ''}; the operator must run \`chmod -R a+rX ${p.spec.model.path}\``,
      );
  }
  return { file: BWRAP, args, cwd: p.workspace, env };
}
