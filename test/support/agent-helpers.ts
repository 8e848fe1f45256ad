import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { io, Socket } from 'socket.io-client';
import type { JoinAck, LogLine, RunResultView, RunView } from '@dryft/libs';
import { packFolder, packFiles, collectFolder } from '@dryft/libs/node';
import { AGENT_MAIN, ROOT } from './quickstart';
import { GENEROUS_RATE_LIMITS } from './rate-limits';

/** A signed-in browser against a hub reached over HTTP (a separate process or a test hub). */
export class HttpUser {
  constructor(
    readonly url: string,
    readonly cookie: string,
    readonly csrf: string,
    readonly login: string,
  ) {}

  static async signIn(url: string, login: string): Promise<HttpUser> {
    const res = await fetch(`${url}/api/auth/dev`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ login }),
    });
    if (res.status !== 200) throw new Error(`dev sign-in failed: ${res.status} ${await res.text()}`);
    const body = (await res.json()) as { csrfToken: string };
    const cookie = res.headers
      .getSetCookie()
      .map((c) => c.split(';')[0])
      .join('; ');
    return new HttpUser(url, cookie, body.csrfToken, login);
  }

  async req<T = any>(method: string, p: string, body?: unknown): Promise<{ status: number; body: T }> {
    const headers: Record<string, string> = { cookie: this.cookie, 'x-csrf-token': this.csrf };
    let payload: BodyInit | undefined;
    if (body instanceof FormData) payload = body;
    else if (body !== undefined) {
      headers['content-type'] = 'application/json';
      payload = JSON.stringify(body);
    }
    const res = await fetch(`${this.url}${p}`, { method, headers, body: payload });
    const text = await res.text();
    let parsed: unknown = text;
    try {
      parsed = JSON.parse(text);
    } catch {
      /* not JSON */
    }
    return { status: res.status, body: parsed as T };
  }

  get<T = any>(p: string) {
    return this.req<T>('GET', p);
  }
  post<T = any>(p: string, body?: unknown) {
    return this.req<T>('POST', p, body ?? {});
  }
  delete<T = any>(p: string) {
    return this.req<T>('DELETE', p);
  }

  async createTeam(name = `${this.login} team`): Promise<{ id: string }> {
    const res = await this.post('/api/teams', { name });
    if (res.status !== 201) throw new Error(`team: ${res.status} ${JSON.stringify(res.body)}`);
    return res.body;
  }

  async upload(archive: Buffer, benchmark = 'toy-decode', filename = 'engine.tar.gz'): Promise<string> {
    const form = new FormData();
    form.set('benchmark', benchmark);
    form.set('file', new Blob([archive]), filename);
    const res = await this.req('POST', '/api/submissions', form);
    if (res.status !== 201) throw new Error(`upload: ${res.status} ${JSON.stringify(res.body)}`);
    return res.body.submission.id as string;
  }

  async startRun(submissionId: string, mode: 'public' | 'official' = 'public'): Promise<RunView> {
    const res = await this.post(`/api/submissions/${submissionId}/runs`, { mode, confirm: true });
    if (res.status !== 201) throw new Error(`run: ${res.status} ${JSON.stringify(res.body)}`);
    return res.body.run as RunView;
  }

  async run(runId: string): Promise<RunView> {
    return (await this.get<RunView>(`/api/runs/${runId}`)).body;
  }

  async allLogs(runId: string): Promise<LogLine[]> {
    const out: LogLine[] = [];
    let after = 0;
    for (;;) {
      const page = (await this.get(`/api/runs/${runId}/logs?after=${after}&limit=1000`)).body as {
        items: LogLine[];
        nextAfter: number;
      };
      out.push(...page.items);
      if (page.items.length === 0) return out;
      after = page.nextAfter;
    }
  }

  async waitFor(runId: string, done: (r: RunView) => boolean, timeoutMs = 60_000): Promise<RunView> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const run = await this.run(runId);
      if (done(run)) return run;
      if (Date.now() > deadline)
        throw new Error(`run ${runId} still ${run.status} after ${timeoutMs} ms: ${JSON.stringify(run)}`);
      await new Promise((r) => setTimeout(r, 150));
    }
  }

  async createAgent(name: string): Promise<{ id: string; token: string }> {
    const res = await this.post('/api/admin/agents', { name });
    if (res.status !== 201) throw new Error(`agent: ${res.status} ${JSON.stringify(res.body)}`);
    return res.body;
  }
}

export const terminal = (r: RunView) => ['succeeded', 'failed', 'canceled'].includes(r.status);

/** A `/live` client that records what it receives for one run. */
export class RunWatcher {
  readonly socket: Socket;
  readonly lines: LogLine[] = [];
  readonly statuses: RunView[] = [];
  results: RunResultView[] = [];
  reconnects = 0;

  constructor(url: string, auth: { cookie?: string; token?: string }) {
    this.socket = io(`${url}/live`, {
      transports: ['websocket'],
      forceNew: true,
      extraHeaders: auth.cookie ? { cookie: auth.cookie } : undefined,
      auth: auth.token ? { token: auth.token } : {},
      reconnectionDelay: 100,
      reconnectionDelayMax: 500,
    });
    this.socket.on('run.log', (e: { lines: LogLine[] }) => this.lines.push(...e.lines));
    this.socket.on('run.status', (e: { run: RunView }) => this.statuses.push(e.run));
    this.socket.on('run.result', (e: { result: RunResultView }) => this.results.push(e.result));
  }

  get lastSeq(): number {
    return this.lines.length ? this.lines[this.lines.length - 1].seq : 0;
  }

  async connected(): Promise<void> {
    if (this.socket.connected) return;
    await new Promise<void>((resolve, reject) => {
      this.socket.once('connect', () => resolve());
      this.socket.once('connect_error', (e) => reject(e));
    });
  }

  /** Joins, and again after every reconnect from the last line it has (the CLI and the web do this). */
  async join(runId: string): Promise<JoinAck> {
    await this.connected();
    this.socket.io.on('reconnect', () => {
      this.reconnects++;
      this.socket.emit('run.join', { runId, afterSeq: this.lastSeq }, () => undefined);
    });
    return this.socket.timeout(10_000).emitWithAck('run.join', { runId, afterSeq: 0 });
  }

  /** Asserts lines 1..n arrived exactly once, in order. */
  assertContiguous(): void {
    this.lines.forEach((l, i) => {
      if (l.seq !== i + 1)
        throw new Error(`watcher line ${i} has seq ${l.seq} (expected ${i + 1}): lost or duplicated lines`);
    });
  }

  close(): void {
    this.socket.close();
  }
}

export interface AgentProc {
  child: ChildProcess;
  output: () => string;
  exited: Promise<number | null>;
  workDir: string;
}

/** A real agent process with a config file (slot 0 on the CPU unless told otherwise). */
export function spawnAgent(opts: {
  apiUrl: string;
  token: string;
  dir: string;
  config?: Record<string, unknown>;
  env?: Record<string, string>;
  args?: string[];
}): AgentProc {
  mkdirSync(opts.dir, { recursive: true });
  const workDir = path.join(opts.dir, 'work');
  const file = path.join(opts.dir, 'agent.json');
  writeFileSync(
    file,
    JSON.stringify({
      apiUrl: opts.apiUrl,
      token: opts.token,
      slots: [{ index: 0, gpus: [] }],
      accelerator: 'cpu',
      gpuModel: null,
      workDir,
      repoDir: ROOT,
      cancelGraceMs: 1_000,
      shutdownGraceMs: 3_000,
      ...opts.config,
    }),
    { mode: 0o600 },
  );
  const child = spawn(process.execPath, [AGENT_MAIN, '--config', file, ...(opts.args ?? [])], {
    cwd: ROOT,
    env: { ...process.env, DRYFT_AGENT_TEST_HOOKS: '1', ...opts.env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  const keep = (c: Buffer) => {
    out += c.toString('utf8');
    if (process.env.AGENT_VERBOSE) process.stderr.write(`[agent] ${c}`);
  };
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return { child, output: () => out, exited, workDir };
}

export async function stopProc(
  p: { child: ChildProcess; exited: Promise<unknown> } | undefined,
  signal: NodeJS.Signals = 'SIGTERM',
): Promise<void> {
  if (!p || p.child.exitCode !== null || p.child.signalCode !== null) return;
  p.child.kill(signal);
  const timer = setTimeout(() => p.child.kill('SIGKILL'), 8_000);
  await p.exited;
  clearTimeout(timer);
}

export const TOY_ENGINE = path.join(ROOT, 'starters/toy-decode/engine');

/** The toy starter engine with extra Python run at import (slow, chatty or hostile submissions). */
export async function toyEngineWith(prelude: string): Promise<Buffer> {
  const files = await collectFolder(TOY_ENGINE);
  return packFiles(
    files.map((f) =>
      f.name === 'engine.py'
        ? { name: f.name, content: Buffer.from(`${prelude}\n${Buffer.from(f.content).toString('utf8')}`) }
        : f,
    ),
  );
}

export const toyStarter = () => packFolder(TOY_ENGINE);

export async function until<T>(
  what: string,
  probe: () => T | Promise<T>,
  timeoutMs = 30_000,
): Promise<NonNullable<T>> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await probe();
    if (v) return v as NonNullable<T>;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

export interface ApiProc extends AgentProc {
  url: string;
}

/**
 * `node apps/api/dist/main.js` on a given database and port (restartable: same arguments, same hub).
 * Without `dbUrl`, the hub runs its embedded Postgres in `dataDir`.
 */
export async function startApi(opts: {
  dbUrl?: string;
  port: number;
  dataDir: string;
  env?: Record<string, string>;
  /** In a process group of its own (signal the group, as a terminal's Ctrl-C does). */
  detached?: boolean;
}): Promise<ApiProc> {
  const url = `http://127.0.0.1:${opts.port}`;
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    NODE_ENV: 'development',
    LOG_LEVEL: 'warn',
    DATABASE_URL: opts.dbUrl,
    PORT: String(opts.port),
    HOST: '127.0.0.1',
    PUBLIC_URL: url,
    DATA_DIR: opts.dataDir,
    ...GENEROUS_RATE_LIMITS,
    ...opts.env,
  };
  delete env.GITHUB_CLIENT_ID;
  delete env.GITHUB_CLIENT_SECRET;
  if (!opts.dbUrl) delete env.DATABASE_URL;
  const child = spawn(process.execPath, [path.join(ROOT, 'apps/api/dist/main.js')], {
    cwd: ROOT,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: opts.detached,
  });
  let out = '';
  const keep = (c: Buffer) => {
    out += c.toString('utf8');
    if (process.env.AGENT_VERBOSE) process.stderr.write(`[api:${opts.port}] ${c}`);
  };
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`the API exited (${child.exitCode}):\n${out}`);
    try {
      if ((await fetch(`${url}/api/health`)).ok) break;
    } catch {
      /* not yet */
    }
    if (Date.now() > deadline) throw new Error(`the API did not start:\n${out}`);
    await new Promise((r) => setTimeout(r, 150));
  }
  return { child, output: () => out, exited, workDir: opts.dataDir, url };
}

/** Processes on this machine whose command line contains `marker` (leftovers of a run). */
export function processesWith(marker: string): number[] {
  const out: number[] = [];
  for (const e of readdirSync('/proc')) {
    if (!/^\d+$/.test(e) || Number(e) === process.pid) continue;
    try {
      if (readFileSync(`/proc/${e}/cmdline`, 'utf8').includes(marker)) out.push(Number(e));
    } catch {
      /* gone */
    }
  }
  return out;
}
