import { spawnSync } from 'node:child_process';
import { existsSync, realpathSync } from 'node:fs';
import * as path from 'node:path';

export const BWRAP = process.env.DRYFT_BWRAP ?? '/usr/bin/bwrap';

export interface SandboxProbe {
  ok: boolean;
  reason: string;
}

/** Whether bubblewrap is installed and can create the namespaces a run needs, on this box, now. */
export function probeSandbox(): SandboxProbe {
  if (!existsSync(BWRAP))
    return { ok: false, reason: `${BWRAP} is not installed (apt-get install bubblewrap)` };
  const r = spawnSync(
    BWRAP,
    [
      '--ro-bind',
      '/',
      '/',
      '--dev',
      '/dev',
      '--proc',
      '/proc',
      '--unshare-net',
      '--unshare-pid',
      '--unshare-ipc',
      '--new-session',
      '--die-with-parent',
      '--cap-drop',
      'ALL',
      'true',
    ],
    {
      encoding: 'utf8',
      timeout: 10_000,
    },
  );
  if (r.status === 0) return { ok: true, reason: 'bubblewrap can create network and pid namespaces' };
  return {
    ok: false,
    reason: `bubblewrap cannot create namespaces here: ${(r.stderr || r.error?.message || `exit ${r.status}`).trim()}`,
  };
}

export interface SandboxPlan {
  /** The run's writable workspace (the unpacked submission); the only writable host path. */
  workspace: string;
  /** The spec (deleted by the harness once read) and the wrapper: outside the workspace. */
  privateDir: string;
  /** More read-only folders (the events socket's). */
  readOnly: string[];
  /** GPU ids of the slot: only their /dev/nvidiaN nodes are visible. */
  gpus: string[];
  /** Paths the run needs to read (interpreter, harness, repo, models): never hidden. */
  needed: string[];
  /** Paths to hide behind an empty tmpfs (other runs, tokens, the hub's data, homes). */
  hide: string[];
  /** Files to blank (the agent's config and token files). */
  blank: string[];
  env: Record<string, string>;
  command: string[];
}

const within = (p: string, dir: string) => p === dir || p.startsWith(dir.endsWith('/') ? dir : `${dir}/`);

function real(p: string): string {
  try {
    return realpathSync(p);
  } catch {
    return path.resolve(p);
  }
}

/**
 * The bubblewrap command line: the host filesystem read-only, fresh /dev, /proc, /tmp; no network;
 * own pid, ipc and uts namespaces (everything in it dies with it); a new session (no ioctl on the
 * agent's terminal); no capabilities; only the slot's GPU device nodes; a clean environment.
 */
export function bwrapArgs(plan: SandboxPlan): string[] {
  const needed = plan.needed.map(real);
  const args = ['--ro-bind', '/', '/', '--dev', '/dev', '--proc', '/proc'];
  const hidden: string[] = [];
  for (const h of plan.hide) {
    const dir = real(h);
    if (!existsSync(dir) || dir === '/') continue;
    // A hidden folder that holds something the run needs (the interpreter under /root, say) stays visible.
    if (needed.some((n) => within(n, dir))) continue;
    if (hidden.some((x) => within(dir, x))) continue;
    hidden.push(dir);
    args.push('--tmpfs', dir);
  }
  for (const f of plan.blank) if (existsSync(f)) args.push('--ro-bind', '/dev/null', real(f));
  // The private folder is writable only so the harness can delete the spec once read (--consume-spec):
  // the hidden workloads are gone before any submission code runs.
  args.push('--bind', plan.workspace, plan.workspace, '--bind', plan.privateDir, plan.privateDir);
  for (const dir of plan.readOnly) args.push('--ro-bind', dir, dir);
  for (const id of plan.gpus) {
    const node = `/dev/nvidia${id}`;
    if (existsSync(node)) args.push('--dev-bind', node, node);
  }
  if (plan.gpus.length > 0) {
    for (const node of [
      '/dev/nvidiactl',
      '/dev/nvidia-uvm',
      '/dev/nvidia-uvm-tools',
      '/dev/nvidia-modeset',
    ]) {
      if (existsSync(node)) args.push('--dev-bind', node, node);
    }
  }
  args.push('--unshare-net', '--unshare-pid', '--unshare-ipc', '--unshare-uts', '--hostname', 'dryft-run');
  args.push(
    '--new-session',
    '--die-with-parent',
    '--cap-drop',
    'ALL',
    '--chdir',
    plan.workspace,
    '--clearenv',
  );
  for (const [k, v] of Object.entries(plan.env)) args.push('--setenv', k, v);
  args.push('--', ...plan.command);
  return args;
}
