import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import * as path from 'node:path';
import { z } from 'zod';

/**
 * The agent's settings: a JSON file (`--config FILE`), then environment overrides, then flags.
 * Paths in the file resolve against the file's folder; `--local` builds the settings `npm start`
 * needs without any file.
 */
export const SlotConfig = z.object({
  index: z.number().int().nonnegative(),
  /** CUDA device ids this slot owns (its /dev/nvidiaN nodes are the only GPUs its sandbox sees). */
  gpus: z.array(z.string().regex(/^\d+$/, 'a GPU id is the number N of /dev/nvidiaN')).default([]),
  /**
   * CPUs the slot's harness and engine children are pinned to, as `taskset -c` takes them ("4-7",
   * "0,2,4"). Both children of an official run then share one CPU set, so placement is no
   * difference between baseline and candidate, and slots stop taking each other's cores.
   */
  cpus: z
    .string()
    .regex(/^\d+(-\d+)?(,\d+(-\d+)?)*$/, 'a CPU list as taskset -c takes it, such as "4-7" or "0,2,4"')
    .optional(),
});

export const AgentConfigFile = z.object({
  apiUrl: z.string().url(),
  /** The agent token itself, or a file holding it (preferred: keep it out of the config). */
  token: z.string().optional(),
  tokenFile: z.string().optional(),
  slots: z.array(SlotConfig).min(1),
  accelerator: z.enum(['gpu', 'cpu']).optional(),
  /** As nvidia-smi names it (benchmark definitions list these); detected when omitted. */
  gpuModel: z.string().nullable().optional(),
  /** Benchmarks this box has the models for; empty = whatever fits its hardware. */
  benchmarks: z.array(z.string()).default([]),
  harness: z
    .object({
      /** Interpreter; default HARNESS_PYTHON, else the first of /usr/bin/python3, python3 that can run the benchmark. */
      python: z.string().optional(),
      /** Folder holding the `harness` package (PYTHONPATH); default <repoDir>/harness. */
      dir: z.string().optional(),
      /**
       * Replaces `python -m harness run …` (tests, other evaluators). Placeholders: {python} {benchmark}
       * {submission} {mode} {spec} {eventsFd}.
       */
      command: z.array(z.string()).optional(),
    })
    .default({}),
  /** Model weights per benchmark id, overriding the definition's path. */
  models: z.record(z.string(), z.string()).default({}),
  workDir: z.string(),
  /** The Dryft checkout: starters/ (baseline engines), models/, harness/. */
  repoDir: z.string(),
  insecureNoSandbox: z.boolean().default(false),
  /**
   * Extra paths that must never be visible in the sandbox besides the defaults: a read-only mount
   * (model, interpreter, harness) that is or holds one of them is refused.
   */
  hidePaths: z.array(z.string()).default([]),
  /** Engine children run as uid sandboxUidBase + 4 × slot (+0 baseline, +1 candidate/training). */
  sandboxUidBase: z.number().int().min(1000).default(61000),
  /** Per-run limits of each engine child (harness/harness/jail.py). */
  limits: z
    .object({
      /** RLIMIT_NPROC of the child's own uid: processes and threads. */
      processes: z.number().int().min(16).default(2048),
      /** RLIMIT_NOFILE. */
      openFiles: z.number().int().min(64).default(4096),
      /** CPU runs where the definition sets no memory limit (RLIMIT_DATA); default: half the RAM / slots. */
      memoryBytes: z.number().int().positive().nullable().default(null),
      /** Size of each of the child's tmpfs: its workspace (a copy of the submission) and its /tmp. */
      workspaceBytes: z
        .number()
        .int()
        .min(1_048_576)
        .default(1024 * 1024 * 1024),
    })
    .prefault({}),
  /**
   * The candidate's compile cache for decode runs, kept between one team's runs on one slot
   * (compile-cache.ts): `maxBytesPerSlot` bounds the slot's caches together (least recently used
   * team evicted first); 0 turns it off (every decode run compiles from an empty cache, as training
   * runs always do).
   */
  compileCache: z
    .object({
      maxBytesPerSlot: z
        .number()
        .int()
        .nonnegative()
        .default(4 * 1024 * 1024 * 1024),
    })
    .prefault({}),
  cancelGraceMs: z.number().int().positive().default(5_000),
  shutdownGraceMs: z.number().int().nonnegative().default(60_000),
  batchIntervalMs: z.number().int().positive().default(50),
  /** The agent's own Prometheus metrics on `GET http://host:port/metrics` (left out: none). */
  metrics: z
    .object({
      port: z.number().int().min(0).max(65535),
      /** Loopback unless a scraper elsewhere must reach it. */
      host: z.string().min(1).default('127.0.0.1'),
    })
    .optional(),
});
export type AgentConfigFile = z.infer<typeof AgentConfigFile>;

export interface AgentConfig extends Omit<AgentConfigFile, 'token' | 'tokenFile'> {
  token: string;
  configFile: string | null;
  tokenFile: string | null;
  local: boolean;
}

export class AgentConfigError extends Error {}

export function repoRoot(): string {
  return process.env.DRYFT_ROOT ?? path.resolve(__dirname, '..', '..', '..');
}

function readToken(file: string): string {
  try {
    return readFileSync(file, 'utf8').trim();
  } catch (err) {
    throw new AgentConfigError(`cannot read the agent token from ${file}: ${(err as Error).message}`);
  }
}

export function loadAgentConfig(argv: string[], env: NodeJS.ProcessEnv = process.env): AgentConfig {
  const flag = (name: string) => argv.includes(name);
  const value = (name: string) => {
    const i = argv.indexOf(name);
    return i >= 0 ? argv[i + 1] : undefined;
  };
  const local = flag('--local');
  const configPath = value('--config') ?? env.DRYFT_AGENT_CONFIG;
  const root = repoRoot();
  let raw: Record<string, unknown>;
  let base: string;
  if (configPath) {
    base = path.dirname(path.resolve(configPath));
    try {
      raw = JSON.parse(readFileSync(configPath, 'utf8')) as Record<string, unknown>;
    } catch (err) {
      throw new AgentConfigError(`cannot read ${configPath}: ${(err as Error).message}`);
    }
  } else if (local) {
    base = root;
    raw = {
      apiUrl: `http://127.0.0.1:${env.PORT ?? '3000'}`,
      tokenFile: env.LOCAL_AGENT_TOKEN_FILE ?? '.data/local-agent.token',
      slots: [{ index: 0, gpus: [] }],
      accelerator: 'cpu',
      gpuModel: null,
      workDir: '.data/agent-work',
      repoDir: '.',
    };
  } else {
    throw new AgentConfigError('pass --config FILE (see apps/gpu-agent/README.md) or --local');
  }
  if (env.DRYFT_API_URL) raw.apiUrl = env.DRYFT_API_URL;
  if (env.DRYFT_AGENT_TOKEN) raw.token = env.DRYFT_AGENT_TOKEN;
  if (env.DRYFT_AGENT_TOKEN_FILE) raw.tokenFile = env.DRYFT_AGENT_TOKEN_FILE;
  if (env.DRYFT_AGENT_WORK_DIR) raw.workDir = env.DRYFT_AGENT_WORK_DIR;
  const parsed = AgentConfigFile.safeParse(raw);
  if (!parsed.success) {
    throw new AgentConfigError(
      parsed.error.issues.map((i) => `${i.path.join('.') || 'config'}: ${i.message}`).join('; '),
    );
  }
  const c = parsed.data;
  const resolve = (p: string) => path.resolve(base, p);
  const tokenFile = c.tokenFile ? resolve(c.tokenFile) : null;
  const token = c.token ?? (tokenFile ? readToken(tokenFile) : '');
  if (!token) throw new AgentConfigError('no agent token: set "token" or "tokenFile" (or DRYFT_AGENT_TOKEN)');
  const indexes = new Set(c.slots.map((s) => s.index));
  if (indexes.size !== c.slots.length) throw new AgentConfigError('slots: every slot needs its own index');
  return {
    ...c,
    token,
    tokenFile,
    configFile: configPath ? path.resolve(configPath) : null,
    local,
    workDir: resolve(c.workDir),
    repoDir: resolve(c.repoDir),
    harness: {
      ...c.harness,
      dir: resolve(c.harness.dir ?? path.join(c.repoDir, 'harness')),
      python: c.harness.python ?? env.HARNESS_PYTHON,
    },
    models: Object.fromEntries(Object.entries(c.models).map(([k, v]) => [k, resolve(v)])),
    insecureNoSandbox: c.insecureNoSandbox || flag('--insecure-no-sandbox'),
  };
}

/** nvidia-smi's view of the box, when there is one. */
export function detectGpu(): { model: string | null; count: number; driver: string | null } {
  const r = spawnSync('nvidia-smi', ['--query-gpu=name,driver_version', '--format=csv,noheader'], {
    encoding: 'utf8',
    timeout: 10_000,
  });
  if (r.status !== 0 || !r.stdout) return { model: null, count: 0, driver: null };
  const rows = r.stdout
    .split('\n')
    .map((l) => l.trim())
    .filter(Boolean)
    .map((l) => l.split(',').map((x) => x.trim()));
  return { model: rows[0]?.[0] ?? null, count: rows.length, driver: rows[0]?.[1] ?? null };
}

const pythonCache = new Map<string, boolean>();

function canImport(python: string, needs: string[]): boolean {
  const key = `${python}|${needs.join(',')}`;
  let ok = pythonCache.get(key);
  if (ok === undefined) {
    const code = needs.length ? `import ${needs.join(', ')}` : 'import sys';
    ok = spawnSync(python, ['-c', code], { stdio: 'ignore', timeout: 60_000 }).status === 0;
    pythonCache.set(key, ok);
  }
  return ok;
}

/**
 * Benchmark kinds this box cannot run although its hardware may fit, with what to do about it: the
 * training harness needs torch, which the quick start does not promise. The hub then gives this
 * agent no such run, and a run waiting for one says what to install.
 */
export function cannotRunKinds(configured: string | undefined): Record<string, string> {
  const python = pickPython(configured, ['torch']);
  if (canImport(python, ['torch'])) return {};
  return {
    training: `${python} cannot import torch, which the training harness needs: install it (apt-get install python3-torch on Debian or Ubuntu) or set HARNESS_PYTHON to a Python that has torch, then restart the agent.`,
  };
}

/**
 * The interpreter for a benchmark: HARNESS_PYTHON (or the config's) when set, else the first of
 * /usr/bin/python3 and python3 that can import what the benchmark needs. The pyenv python3 on PATH
 * may not see Debian's torch, hence the order.
 */
export function pickPython(configured: string | undefined, needs: string[]): string {
  if (configured) return configured;
  for (const candidate of ['/usr/bin/python3', 'python3']) {
    if (candidate.startsWith('/') && !existsSync(candidate)) continue;
    if (canImport(candidate, needs)) return candidate;
  }
  return '/usr/bin/python3';
}

const RUNTIME_PROBE = `
import json, platform
out = {"python": platform.python_version()}
def v(name, get):
    try:
        out[name] = str(get())
    except Exception:
        pass
v("torch", lambda: __import__("torch").__version__)
v("cuda", lambda: __import__("torch").version.cuda)
v("triton", lambda: __import__("triton").__version__)
v("transformers", lambda: __import__("transformers").__version__)
v("safetensors", lambda: __import__("safetensors").__version__)
v("tokenizers", lambda: __import__("tokenizers").__version__)
print(json.dumps({k: x for k, x in out.items() if x and x != "None"}))
`;

/**
 * The versions runs execute with, asked of the harness's interpreter (python, torch and the CUDA it
 * was built for, triton, transformers, safetensors, tokenizers; whichever import), plus the driver: reported in the agent's
 * capabilities and logged at the start of every run. Null when the interpreter cannot be asked.
 */
export function probeRuntime(python: string, driver: string | null): Record<string, string> | null {
  const r = spawnSync(python, ['-I', '-c', RUNTIME_PROBE], { encoding: 'utf8', timeout: 120_000 });
  if (r.status !== 0 || !r.stdout) return null;
  try {
    const found = JSON.parse(r.stdout.trim().split('\n').pop()!) as Record<string, string>;
    return driver ? { ...found, driver } : found;
  } catch {
    return null;
  }
}

/** "python 3.12.3, torch 2.11.0+cu130, cuda 13.0, …" */
export function formatRuntime(runtime: Record<string, string>): string {
  return Object.entries(runtime)
    .map(([k, v]) => `${k} ${v}`)
    .join(', ');
}
