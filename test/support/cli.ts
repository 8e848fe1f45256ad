import { spawn, type ChildProcess } from 'node:child_process';
import { createServer, type Server, type Socket, connect } from 'node:net';
import * as path from 'node:path';

export const ROOT = path.resolve(__dirname, '../..');
export const CLI_MAIN = path.join(ROOT, 'apps/cli/dist/main.js');

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs `node apps/cli/dist/main.js …` as a real child process (no TTY), with a clean config home. */
export function runCli(
  args: string[],
  env: Record<string, string | undefined>,
  opts: { stdin?: string; timeoutMs?: number; bin?: string } = {},
): Promise<CliResult> {
  const child = spawnCli(args, env, opts);
  if (opts.stdin !== undefined) child.child.stdin!.end(opts.stdin);
  else child.child.stdin!.end();
  return child.done;
}

export interface RunningCli {
  child: ChildProcess;
  stdout: () => string;
  stderr: () => string;
  done: Promise<CliResult>;
}

export function spawnCli(
  args: string[],
  env: Record<string, string | undefined>,
  opts: { timeoutMs?: number; bin?: string } = {},
): RunningCli {
  const clean: NodeJS.ProcessEnv = { PATH: process.env.PATH, HOME: process.env.HOME, NO_COLOR: '1', ...env };
  for (const k of Object.keys(clean)) if (clean[k] === undefined) delete clean[k];
  const child = spawn(process.execPath, [opts.bin ?? CLI_MAIN, ...args], {
    cwd: ROOT,
    env: clean,
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (c: Buffer) => (stdout += c.toString('utf8')));
  child.stderr!.on('data', (c: Buffer) => (stderr += c.toString('utf8')));
  const timer = setTimeout(() => child.kill('SIGKILL'), opts.timeoutMs ?? 90_000);
  const done = new Promise<CliResult>((resolve) =>
    child.once('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    }),
  );
  return { child, stdout: () => stdout, stderr: () => stderr, done };
}

/** Signs in with dev sign-in over HTTP, creates a team and a team API token. */
export async function teamToken(
  url: string,
  login: string,
): Promise<{ token: string; teamId: string; teamName: string; cookie: string; csrf: string }> {
  const signIn = await fetch(`${url}/api/auth/dev`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ login }),
  });
  if (signIn.status !== 200) throw new Error(`dev sign-in: ${signIn.status} ${await signIn.text()}`);
  const cookie = signIn.headers
    .getSetCookie()
    .map((c) => c.split(';')[0])
    .join('; ');
  const csrf = ((await signIn.json()) as { csrfToken: string }).csrfToken;
  const headers = { 'content-type': 'application/json', cookie, 'x-csrf-token': csrf };
  const teamName = `${login} team`;
  const team = await fetch(`${url}/api/teams`, {
    method: 'POST',
    headers,
    body: JSON.stringify({ name: teamName }),
  });
  if (team.status !== 201) throw new Error(`team: ${team.status} ${await team.text()}`);
  const teamId = ((await team.json()) as { id: string }).id;
  const tok = await fetch(`${url}/api/teams/${teamId}/tokens`, {
    method: 'POST',
    headers,
    body: JSON.stringify({ name: 'cli e2e' }),
  });
  if (tok.status !== 201) throw new Error(`token: ${tok.status} ${await tok.text()}`);
  const token = ((await tok.json()) as { token: string }).token;
  return { token, teamId, teamName, cookie, csrf };
}

/**
 * A TCP proxy the test controls, between the CLI and the API: `cut()` drops every connection and
 * refuses new ones (as a lost network does), `restore()` accepts again on the same port.
 */
export class TcpProxy {
  private server?: Server;
  private readonly sockets = new Set<Socket>();
  port = 0;
  cuts = 0;
  connections = 0;
  private dropArmed: RegExp | null = null;
  /** Cut every connection that asks for a WebSocket upgrade (a proxy that only passes plain HTTP). */
  refuseUpgrades = false;
  /** Requests whose answer was swallowed (the server did the work; the client never heard). */
  dropped = 0;

  constructor(
    private readonly targetPort: number,
    private readonly targetHost = '127.0.0.1',
  ) {}

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  async start(port = 0): Promise<void> {
    this.server = createServer((client) => {
      this.connections += 1;
      const upstream = connect(this.targetPort, this.targetHost);
      this.sockets.add(client);
      this.sockets.add(upstream);
      let swallow = false;
      client.on('data', (c: Buffer) => {
        if (this.refuseUpgrades && /^upgrade: websocket/im.test(c.toString('latin1'))) {
          end();
          return;
        }
        if (this.dropArmed && this.dropArmed.test(c.toString('latin1'))) {
          this.dropArmed = null;
          swallow = true;
        }
        upstream.write(c);
      });
      upstream.on('data', (c: Buffer) => {
        if (swallow) {
          this.dropped += 1;
          end();
          return;
        }
        client.write(c);
      });
      const end = () => {
        client.destroy();
        upstream.destroy();
        this.sockets.delete(client);
        this.sockets.delete(upstream);
      };
      client.on('error', end);
      upstream.on('error', end);
      client.on('close', end);
      upstream.on('close', end);
    });
    await new Promise<void>((resolve, reject) => {
      this.server!.once('error', reject);
      this.server!.listen(port, '127.0.0.1', () => resolve());
    });
    this.port = (this.server.address() as { port: number }).port;
  }

  /** The next request whose head matches reaches the API, but its answer is lost on the way back. */
  dropNextResponse(requestHead: RegExp): void {
    this.dropArmed = requestHead;
  }

  async cut(): Promise<void> {
    this.cuts += 1;
    const server = this.server;
    this.server = undefined;
    const closed = server ? new Promise<void>((r) => server.close(() => r())) : Promise.resolve();
    for (const s of this.sockets) s.destroy();
    this.sockets.clear();
    await closed;
  }

  async restore(): Promise<void> {
    await this.start(this.port);
  }

  async close(): Promise<void> {
    await this.cut();
  }
}
