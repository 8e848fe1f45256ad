import { spawnSync } from 'node:child_process';
import { existsSync, lstatSync, readdirSync, readlinkSync, realpathSync, statSync } from 'node:fs';
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
  // The harness's sandbox, and inside it the nested one each engine child gets (harness/harness/jail.py).
  const unprivileged = process.getuid?.() !== 0 ? ['--unshare-user', '--uid', '0', '--gid', '0'] : [];
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
      ...unprivileged,
      '--unshare-net',
      '--unshare-pid',
      '--unshare-ipc',
      '--new-session',
      '--die-with-parent',
      '--cap-drop',
      'ALL',
      ...JAIL_CAPS.flatMap((c) => ['--cap-add', c]),
      BWRAP,
      '--ro-bind',
      '/',
      '/',
      '--dev',
      '/dev',
      '--proc',
      '/proc',
      '--unshare-pid',
      '--unshare-net',
      '--as-pid-1',
      '--cap-drop',
      'ALL',
      'true',
    ],
    {
      encoding: 'utf8',
      timeout: 10_000,
    },
  );
  if (r.status === 0)
    return {
      ok: true,
      reason: 'bubblewrap can create network and pid namespaces, and nested ones for the engine',
    };
  return {
    ok: false,
    reason: `bubblewrap cannot create namespaces here (the harness's, and the engine's inside it): ${(r.stderr || r.error?.message || `exit ${r.status}`).trim()}`,
  };
}

/** Where the run's workspace (read-only; each engine child gets a sized copy) and private folder appear inside. */
export const SANDBOX_WORKSPACE = '/dryft/workspace';
export const SANDBOX_PRIVATE = '/dryft/private';
/**
 * The candidate team's persistent compile cache (compile-cache.ts), for the harness alone, and the
 * sized tmpfs it copies it into for the run: the only one of the two the candidate's jail binds
 * (harness/harness/compile_cache.py).
 */
export const SANDBOX_COMPILE_CACHE = '/dryft/compile-cache';
export const SANDBOX_COMPILE_WORK = '/dryft/compile-work';

export interface SandboxPlan {
  /** The unpacked submission: read-only here; the harness copies it into each child's sized tmpfs. */
  workspace: string;
  /** The spec (deleted by the harness once read) and the wrapper: outside the workspace, writable. */
  privateDir: string;
  /** What the run reads: the interpreter's folders, the harness, the model, the baseline engine, the events socket's folder. */
  readOnly: string[];
  /**
   * The candidate's persistent compile cache (compile-cache.ts), read-write at SANDBOX_COMPILE_CACHE,
   * with an empty tmpfs of `bytes` at SANDBOX_COMPILE_WORK; null or absent: none (the run's engines
   * compile from empty caches of their own).
   */
  compileCache?: { dir: string; bytes: number } | null;
  /** GPU ids of the slot: only their /dev/nvidiaN nodes are visible. */
  gpus: string[];
  /** Paths that must never be visible (the work dir of other runs, the hub's data, the agent's files): a read-only path that is or holds one of them is refused. */
  forbidden: string[];
  /** Size of the harness's own /tmp (the child gets its own, see harness/harness/jail.py). */
  tmpBytes: number;
  env: Record<string, string>;
  command: string[];
}

export class SandboxPlanError extends Error {}

export const within = (p: string, dir: string) =>
  p === dir || dir === '/' || p.startsWith(dir.endsWith('/') ? dir : `${dir}/`);

function real(p: string): string {
  try {
    return realpathSync(p);
  } catch {
    return path.resolve(p);
  }
}

/** System folders every interpreter needs (merged-/usr symlinks are recreated as symlinks). */
const SYSTEM_DIRS = ['/usr', '/bin', '/sbin', '/lib', '/lib32', '/lib64', '/libx32'];

/** Whether a path is inside the system folders every sandbox mounts anyway. */
export const isSystemPath = (p: string) => SYSTEM_DIRS.some((d) => within(p, d));
/** /etc files the loader, Python, torch and CUDA read; nothing else of /etc (no shadow, no keys). */
const ETC_FILES = [
  '/etc/ld.so.cache',
  '/etc/ld.so.conf',
  '/etc/ld.so.conf.d',
  '/etc/localtime',
  '/etc/timezone',
  '/etc/passwd',
  '/etc/group',
  '/etc/nsswitch.conf',
  '/etc/host.conf',
  '/etc/hosts',
  '/etc/os-release',
  '/etc/mime.types',
  '/etc/alternatives',
  '/etc/python3',
  '/etc/python3.11',
  '/etc/ssl/certs',
  '/etc/nvidia',
  '/etc/OpenCL',
  '/etc/vulkan',
];

const interpreterCache = new Map<string, string[]>();

/**
 * The folders an interpreter needs, asked of the interpreter itself (prefixes, sys.path, the real
 * executable's folder) and cached: only those that exist, outside /usr (mounted whole anyway).
 */
export function interpreterPaths(python: string): string[] {
  const cached = interpreterCache.get(python);
  if (cached) return cached;
  const probe = spawnSync(
    python,
    [
      '-I',
      '-c',
      'import json, os, site, sys; print(json.dumps([sys.prefix, sys.exec_prefix, sys.base_prefix, sys.base_exec_prefix, os.path.dirname(os.path.realpath(sys.executable)), *sys.path, *site.getsitepackages()]))',
    ],
    { encoding: 'utf8', timeout: 30_000, env: { PATH: '/usr/local/bin:/usr/bin:/bin', LANG: 'C.UTF-8' } },
  );
  if (probe.status !== 0)
    throw new SandboxPlanError(
      `cannot ask ${python} for its folders: ${(probe.stderr || probe.error?.message || '').trim()}`,
    );
  const listed = (JSON.parse(probe.stdout) as string[]).filter((p) => p && path.isAbsolute(p));
  const out = [real(python), ...listed]
    .map((p) => {
      // zip archives on sys.path (python311.zip) mount as their folder when they exist
      const r = real(p);
      return existsSync(r) ? r : null;
    })
    .filter((p): p is string => p !== null && !SYSTEM_DIRS.some((d) => within(p, d)));
  interpreterCache.set(python, out);
  return out;
}

/** Drops paths inside other listed paths (bwrap would mount them twice). */
function outermost(paths: string[]): string[] {
  const sorted = [...new Set(paths)].sort((a, b) => a.length - b.length);
  const kept: string[] = [];
  for (const p of sorted) if (!kept.some((k) => within(p, k))) kept.push(p);
  return kept;
}

/**
 * The bubblewrap command line, an allowlist: an empty root with only the system folders, a few /etc
 * files, the interpreter's folders, the harness, the model and the baseline (all read-only), the
 * run's workspace (read-only: each engine child gets a size-capped copy) and private folder; fresh
 * /dev (only the slot's GPU nodes), /proc and a sized /tmp; no network; own pid, ipc and uts
 * namespaces; a new session; a clean environment. The harness keeps only the capabilities it needs
 * to build each engine child's own sandbox (harness/harness/jail.py); it runs no submission code.
 */
export function bwrapArgs(plan: SandboxPlan): string[] {
  const forbidden = plan.forbidden.map(real);
  const readOnly = outermost(plan.readOnly.map(real).filter((p) => existsSync(p)));
  for (const p of readOnly) {
    const hit = forbidden.find((f) => within(f, p));
    if (p === '/' || hit)
      throw new SandboxPlanError(
        `refusing to mount ${p} into the sandbox: it ${p === '/' ? 'is the whole filesystem' : `holds ${hit}`}; point the setting at a narrower folder`,
      );
  }
  const args: string[] = [];
  // bwrap makes the folders above a mount point 0700: the engine child's own uid could not walk
  // down to the workspace, the harness or the model. They are empty (only the mount points).
  const mounted = [
    ...readOnly,
    SANDBOX_WORKSPACE,
    SANDBOX_PRIVATE,
    ...(plan.compileCache ? [SANDBOX_COMPILE_CACHE, SANDBOX_COMPILE_WORK] : []),
    ...ETC_FILES.filter((f) => existsSync(f)),
  ];
  const above = new Set<string>();
  for (const m of mounted)
    for (let d = path.dirname(m); d !== '/' && d !== '.'; d = path.dirname(d)) above.add(d);
  for (const d of [...above].sort((a, b) => a.length - b.length))
    if (!SYSTEM_DIRS.some((s) => within(d, s))) args.push('--perms', '0755', '--dir', d);
  for (const dir of SYSTEM_DIRS) {
    let st;
    try {
      st = lstatSync(dir);
    } catch {
      continue;
    }
    if (st.isSymbolicLink()) args.push('--symlink', readlinkSync(dir), dir);
    else args.push('--ro-bind', dir, dir);
  }
  for (const f of ETC_FILES) if (existsSync(f)) args.push('--ro-bind', f, f);
  args.push('--ro-bind-try', '/sys', '/sys', '--dev', '/dev', '--proc', '/proc');
  args.push('--perms', '1777', '--size', String(plan.tmpBytes), '--tmpfs', '/tmp');
  // An empty mount point for the engine child's own /run (the root itself stays read-only).
  args.push('--dir', '/run');
  for (const p of readOnly) if (!SYSTEM_DIRS.some((d) => within(p, d))) args.push('--ro-bind', p, p);
  args.push('--ro-bind', plan.workspace, SANDBOX_WORKSPACE);
  // The private folder is writable only so the harness can delete the spec once read (--consume-spec):
  // the hidden workloads are gone before any submission code runs.
  args.push('--bind', plan.privateDir, SANDBOX_PRIVATE);
  if (plan.compileCache) {
    args.push('--bind', plan.compileCache.dir, SANDBOX_COMPILE_CACHE);
    args.push('--perms', '0700', '--size', String(plan.compileCache.bytes), '--tmpfs', SANDBOX_COMPILE_WORK);
  }
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
  // An unprivileged agent gets the same capabilities inside a user namespace of its own.
  if (process.getuid?.() !== 0) args.push('--unshare-user', '--uid', '0', '--gid', '0');
  args.push('--unshare-net', '--unshare-pid', '--unshare-ipc', '--unshare-uts', '--hostname', 'dryft-run');
  args.push('--new-session', '--die-with-parent', '--cap-drop', 'ALL');
  for (const cap of JAIL_CAPS) args.push('--cap-add', cap);
  args.push('--chdir', '/', '--clearenv');
  for (const [k, v] of Object.entries(plan.env)) args.push('--setenv', k, v);
  args.push('--', ...plan.command);
  return args;
}

/** What the harness needs to start each engine child in a nested bubblewrap as another uid. */
export const JAIL_CAPS = [
  'CAP_SYS_ADMIN',
  'CAP_SYS_CHROOT',
  'CAP_SETPCAP',
  'CAP_NET_ADMIN',
  'CAP_SETUID',
  'CAP_SETGID',
  'CAP_CHOWN',
  'CAP_KILL',
];

/**
 * The engine child runs as a uid of its own (sandboxUidBase + 4 × slot, harness/harness/jail.py),
 * not the agent's: it reads the model through the "other" permission bits. The entries of a model
 * folder (or the file itself) that it could not read: files without o+r, folders without o+rx.
 * `save_pretrained` writes model.safetensors 0600, which inside the jail fails as a bare
 * FileNotFoundError; the agent refuses the run up front with this list instead.
 */
export function unreadableByEngine(modelPath: string): string[] {
  const bad: string[] = [];
  const visit = (p: string, depth: number) => {
    let st;
    try {
      st = statSync(p);
    } catch {
      return;
    }
    if (st.isDirectory()) {
      if ((st.mode & 0o005) !== 0o005) bad.push(p);
      if (depth > 0) for (const name of readdirSync(p)) visit(path.join(p, name), depth - 1);
    } else if ((st.mode & 0o004) === 0) bad.push(p);
  };
  visit(modelPath, 2);
  return bad;
}
