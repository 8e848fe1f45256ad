import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { parse } from 'yaml';

export const ROOT = path.resolve(__dirname, '../..');
export const DOCKER = path.join(ROOT, 'docker');

/** What docker/.env.example sets: the variables an operator fills in. */
export const EXAMPLE_ENV: Record<string, string> = Object.fromEntries(
  readFileSync(path.join(DOCKER, '.env.example'), 'utf8')
    .split('\n')
    .filter((l) => /^[A-Z_][A-Z0-9_]*=/.test(l))
    .map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]),
);

export class InterpolationError extends Error {
  constructor(readonly missing: { name: string; message: string }[]) {
    super(missing.map((m) => `${m.name}: ${m.message}`).join('\n'));
  }
}

/**
 * Compose's variable interpolation as `docker compose config` applies it: `${X}`, `${X:-default}`,
 * `${X-default}`, `${X:?message}`, `${X?message}`, `$$` for a literal `$`. A required variable that
 * is unset (or empty, for `:?`) is collected, and all of them thrown at once.
 */
export function interpolate(text: string, env: Record<string, string | undefined>): string {
  const missing: { name: string; message: string }[] = [];
  const out = text.replace(
    /\$\$|\$\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?)([-?])([^}]*))?\}|\$([A-Za-z_][A-Za-z0-9_]*)/g,
    (whole, name?: string, colon?: string, op?: string, arg?: string, bare?: string) => {
      if (whole === '$$') return '$';
      if (bare) return env[bare] ?? '';
      const value = env[name!];
      const unset = colon ? !value : value === undefined;
      if (!op) return value ?? '';
      if (op === '-') return unset ? arg! : value!;
      if (unset) missing.push({ name: name!, message: arg! });
      return value ?? '';
    },
  );
  if (missing.length) throw new InterpolationError(missing);
  return out;
}

export interface ComposeService {
  image?: string;
  build?: { context: string; dockerfile: string };
  profiles?: string[];
  restart?: string;
  environment?: Record<string, string | number | boolean | null>;
  secrets?: string[];
  volumes?: string[];
  ports?: string[];
  healthcheck?: { test: string[] | string };
  depends_on?: Record<string, { condition?: string }> | string[];
  entrypoint?: string[];
  command?: string[];
  deploy?: {
    resources?: {
      reservations?: { devices?: { driver?: string; count?: unknown; capabilities?: string[] }[] };
    };
  };
  security_opt?: string[];
  cap_add?: string[];
}

export interface ComposeFile {
  services: Record<string, ComposeService>;
  secrets?: Record<string, { file?: string; environment?: string }>;
  volumes?: Record<string, unknown>;
}

/** A compose file of docker/, interpolated with `env` and parsed (anchors and `<<` merges applied). */
export function loadCompose(
  file: string,
  env: Record<string, string | undefined> = EXAMPLE_ENV,
): ComposeFile {
  const text = interpolate(readFileSync(path.join(DOCKER, file), 'utf8'), env);
  return parse(text, { merge: true }) as ComposeFile;
}

/** A service's environment as strings (compose passes every scalar as a string). */
export function serviceEnv(service: ComposeService): Record<string, string> {
  return Object.fromEntries(
    Object.entries(service.environment ?? {}).map(([k, v]) => [k, v === null ? '' : String(v)]),
  );
}

export interface Mount {
  source: string;
  target: string;
  readOnly: boolean;
  /** A named volume (not a path on the host). */
  named: boolean;
}

/** The short `SOURCE:TARGET[:ro]` volume syntax. */
export function mounts(service: ComposeService): Mount[] {
  return (service.volumes ?? []).map((v) => {
    const parts = v.split(':');
    const readOnly = parts.length > 2 && parts[parts.length - 1].split(',').includes('ro');
    const [source, target] = parts;
    return { source, target, readOnly, named: !/^[./~]/.test(source) };
  });
}

/** The secret a `/run/secrets/NAME` path names, or null. */
export function secretName(value: string): string | null {
  const m = /^\/run\/secrets\/([A-Za-z0-9_.-]+)$/.exec(value);
  return m ? m[1] : null;
}

export interface DockerfileStage {
  from: string;
  /** USER of the stage (last one), as written. */
  user: string | null;
  /** RUN commands with continuations joined. */
  runs: string[];
  env: Record<string, string>;
  healthcheck: string | null;
  cmd: string | null;
}

/** The final stage of a Dockerfile in docker/ (the image that runs), ARGs before FROM substituted. */
export function finalStage(file: string): DockerfileStage {
  const text = readFileSync(path.join(DOCKER, file), 'utf8').replace(/\\\n/g, ' ');
  const lines = text.split('\n').filter((l) => l.trim() && !l.trim().startsWith('#'));
  const args: Record<string, string> = {};
  let stage: DockerfileStage | null = null;
  for (const line of lines) {
    const [instr, ...rest] = line.trim().split(/\s+/);
    const value = rest.join(' ');
    const upper = instr.toUpperCase();
    if (upper === 'ARG' && !stage) {
      const [k, v] = value.split('=');
      args[k] = v ?? '';
    } else if (upper === 'FROM') {
      const from = value.split(/\s+AS\s+/i)[0].replace(/\$\{(\w+)\}/g, (_, k: string) => args[k] ?? '');
      stage = { from, user: null, runs: [], env: {}, healthcheck: null, cmd: null };
    } else if (stage && upper === 'USER') stage.user = value;
    else if (stage && upper === 'RUN') stage.runs.push(value);
    else if (stage && upper === 'HEALTHCHECK') stage.healthcheck = value;
    else if (stage && upper === 'CMD') stage.cmd = value;
    else if (stage && upper === 'ENV') {
      for (const m of value.matchAll(/([A-Za-z_][A-Za-z0-9_]*)=("[^"]*"|\S+)/g))
        stage.env[m[1]] = m[2].replace(/^"|"$/g, '');
    }
  }
  if (!stage) throw new Error(`${file} has no FROM`);
  return stage;
}

/** `uid[:gid]` of a USER line. */
export function userIds(user: string | null): { uid: number; gid: number | null } | null {
  const m = /^(\d+)(?::(\d+))?$/.exec(user ?? '');
  return m ? { uid: Number(m[1]), gid: m[2] ? Number(m[2]) : null } : null;
}

/**
 * Owner (`uid:gid`) and mode the final stage's RUN lines give a folder: from `mkdir -p … DIR …`,
 * `chown U:G … DIR …` and `chmod MODE … DIR …`.
 */
export function folderInImage(stage: DockerfileStage, dir: string) {
  let made = false;
  let owner: { uid: number; gid: number | null } | null = null;
  let mode: string | null = null;
  for (const run of stage.runs) {
    for (const cmd of run.split(/&&|;/).map((c) => c.trim().split(/\s+/))) {
      const targets = cmd.filter((w) => !w.startsWith('-'));
      if (!targets.includes(dir)) continue;
      if (cmd[0] === 'mkdir') made = true;
      if (cmd[0] === 'chown') owner = userIds(targets[1]);
      if (cmd[0] === 'chmod') mode = targets[1];
    }
  }
  return { made, owner, mode };
}
