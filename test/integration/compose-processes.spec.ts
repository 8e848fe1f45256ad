import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import {
  chmodSync,
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { Client } from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { checkTokenFormat } from '@dryft/libs/node';
import { HttpUser, terminal } from '../support/agent-helpers';
import { toyStarter } from '../support/archives';
import { loadCompose, ROOT, secretName, serviceEnv } from '../support/compose';
import { createTestDatabase } from '../support/db';
import { GithubStandin, startGithubStandin } from '../support/github-standin';
import { hasRedis } from '../support/prerequisites';
import { AGENT_MAIN, API_MAIN, freePort } from '../support/quickstart';

const ADMIN_MAIN = path.join(ROOT, 'apps/api/dist/admin-cli/main.js');
const redisUrl = inject('redisUrl');
const reachable = await hasRedis(redisUrl);

interface Proc {
  child: ChildProcess;
  output: () => string;
  exited: Promise<number | null>;
}

function start(args: string[], env: NodeJS.ProcessEnv): Proc {
  const child = spawn(process.execPath, args, { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  const keep = (c: Buffer) => {
    out = (out + c.toString('utf8')).slice(-200_000);
  };
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
  // 'close', not 'exit': the output is complete only once the pipes closed.
  const exited = new Promise<number | null>((resolve) => child.once('close', (code) => resolve(code)));
  return { child, output: () => out, exited };
}

async function stop(p: Proc | undefined): Promise<void> {
  if (!p || p.child.exitCode !== null || p.child.signalCode !== null) return;
  p.child.kill('SIGTERM');
  const timer = setTimeout(() => p.child.kill('SIGKILL'), 10_000);
  await p.exited;
  clearTimeout(timer);
}

async function until<T>(
  what: string,
  probe: () => Promise<T | undefined>,
  procs: Proc[],
  ms = 60_000,
): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const exited = procs.find((p) => p.child.exitCode !== null);
    if (exited) throw new Error(`${what}: a process exited (${exited.child.exitCode}):\n${exited.output()}`);
    const got = await probe().catch(() => undefined);
    if (got !== undefined) return got;
    if (Date.now() > deadline)
      throw new Error(`${what}: not within ${ms / 1000} s:\n${procs.map((p) => p.output()).join('\n---\n')}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

/**
 * The compose stack without Docker: the processes docker/docker-compose.yml starts (two API
 * replicas at once on a fresh database, the one-shot `admin agent-token`, the agent from
 * docker/agent.json) with the environment the file gives them, secrets as files made by
 * scripts/compose-secrets.sh and read through *_FILE, in production mode. Only the addresses are
 * this machine's: Postgres, Redis and the ports; the edge (nginx) is left out, the agent talks to
 * a replica directly. Sign-in is GitHub OAuth (a local stand-in), as in production.
 */
describe.skipIf(!reachable)("the compose stack's processes, started directly", () => {
  const work = mkdtempSync(path.join(tmpdir(), 'dryft-stack-'));
  const stack = loadCompose('docker-compose.yml');
  const procs: Proc[] = [];
  let replicas: { url: string; metricsUrl: string; proc: Proc }[] = [];
  let agent: Proc | undefined;
  let github: GithubStandin;
  let db: { url: string; drop: () => Promise<void> };
  let databaseUrl: string;
  const secretsDir = path.join(work, 'secrets');
  const tokenFile = path.join(work, 'run-dryft-agent', 'token');
  const organizer = 'stack-org';
  /** The bodies of the OAuth code exchanges the hub sent GitHub (they carry the client secret). */
  const exchanges: string[] = [];

  /** A service's environment as compose gives it, with /run/secrets/*, volumes and hosts mapped here. */
  function envOf(service: string, extra: Record<string, string> = {}): NodeJS.ProcessEnv {
    const env = serviceEnv(stack.services[service]);
    const out: NodeJS.ProcessEnv = { PATH: process.env.PATH, HOME: process.env.HOME };
    for (const [k, v] of Object.entries(env)) {
      const secret = secretName(v);
      // The file compose mounts at /run/secrets/NAME: the secret's `file:` under docker/secrets/.
      out[k] = secret ? path.join(secretsDir, path.basename(stack.secrets![secret].file!)) : v;
    }
    out.DATABASE_URL = databaseUrl;
    out.REDIS_URL = redisUrl;
    out.REDIS_STREAM = `dryft-stack-${process.pid}-${Date.now()}`;
    out.ARTIFACT_DIR = path.join(work, 'artifacts');
    out.BENCHMARKS_DIR = path.join(work, 'benchmarks');
    out.GITHUB_WEB_URL = github.url;
    out.GITHUB_API_URL = github.url;
    out.ADMIN_LOGINS = organizer;
    out.LOG_LEVEL = 'warn';
    // Every container has its own 9464; here the processes share one machine.
    if (out.METRICS_PORT) {
      out.METRICS_PORT = '0';
      out.METRICS_HOST = '127.0.0.1';
    }
    return { ...out, ...extra };
  }

  beforeAll(async () => {
    for (const f of [API_MAIN, AGENT_MAIN, ADMIN_MAIN])
      if (!existsSync(f)) throw new Error(`${f} is missing: run \`npm run build\` first`);
    github = await startGithubStandin();
    github.route((req, _res, body) => {
      if (req.url?.startsWith('/login/oauth/access_token')) exchanges.push(body);
      return false;
    });
    github.users.set(organizer, {
      id: 4242,
      login: organizer,
      name: 'Stack Organizer',
      avatar_url: 'https://avatars.example/u/4242',
    });
    // The operator's first step: the secrets, as compose-secrets.sh makes them, and the OAuth one pasted in.
    const made = spawnSync('bash', [path.join(ROOT, 'scripts/compose-secrets.sh'), secretsDir], {
      encoding: 'utf8',
    });
    expect(made.status, made.stderr).toBe(0);
    const client = path.join(secretsDir, 'github_client_secret');
    chmodSync(client, 0o644);
    writeFileSync(client, 'oauth-secret-from-a-file\n');
    chmodSync(client, 0o444);
    // The database, with its password in the secret file as Postgres's image would take it.
    db = await createTestDatabase();
    const url = new URL(db.url);
    if (url.password) {
      const pw = path.join(secretsDir, 'postgres_password');
      chmodSync(pw, 0o644);
      writeFileSync(pw, decodeURIComponent(url.password));
      url.password = '';
    }
    databaseUrl = url.toString();
    // The private benchmark folder the stack mounts read-only.
    cpSync(path.join(ROOT, 'config/benchmarks'), path.join(work, 'benchmarks'), { recursive: true });

    // docker compose up: both replicas at once on the empty database (the migrations take turns).
    replicas = await Promise.all(
      ['api-1', 'api-2'].map(async (name) => {
        const port = await freePort();
        const metricsPort = await freePort();
        const proc = start(
          ['--max-semi-space-size=64', API_MAIN],
          envOf(name, {
            PORT: String(port),
            HOST: '127.0.0.1',
            DATA_DIR: path.join(work, `${name}-data`),
            METRICS_PORT: String(metricsPort),
          }),
        );
        procs.push(proc);
        return {
          url: `http://127.0.0.1:${port}`,
          metricsUrl: `http://127.0.0.1:${metricsPort}/metrics`,
          proc,
        };
      }),
    );
    for (const r of replicas)
      await until(
        'the replica is healthy',
        async () => ((await fetch(`${r.url}/api/health`)).ok ? true : undefined),
        procs,
      );
  }, 120_000);

  afterAll(async () => {
    await stop(agent);
    for (const p of procs) await stop(p);
    await github?.close();
    await db?.drop().catch(() => undefined);
    rmSync(work, { recursive: true, force: true });
  });

  /**
   * `docker compose run --rm admin …`: its status, standard output and error. Not spawnSync: a
   * blocked event loop leaves fetch's kept-alive sockets to the replicas stale.
   */
  async function admin(
    ...args: string[]
  ): Promise<{ status: number | null; stdout: string; stderr: string }> {
    const child = spawn(process.execPath, [ADMIN_MAIN, ...args], { cwd: ROOT, env: envOf('admin') });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString('utf8')));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString('utf8')));
    const status = await new Promise<number | null>((resolve) => child.once('close', resolve));
    return { status, stdout, stderr };
  }

  it('comes up healthy in production on both replicas, with the dev sign-in off', async () => {
    // The hidden-seed secret came from its file, the same for both: neither replica made its own.
    for (const name of ['api-1', 'api-2'])
      expect(existsSync(path.join(work, `${name}-data`, 'hidden-seed.secret')), name).toBe(false);
    for (const r of replicas) {
      const health = await (await fetch(`${r.url}/api/health`)).json();
      expect(health).toMatchObject({ status: 'ok', db: 'up' });
      const dev = await fetch(`${r.url}/api/auth/dev`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ login: 'anyone' }),
      });
      expect(dev.status).toBeGreaterThanOrEqual(400);
    }
  });

  it("answers Prometheus on each replica's metrics listener (what docker/prometheus/prometheus.yml scrapes)", async () => {
    for (const r of replicas) {
      const res = await fetch(r.metricsUrl);
      expect(res.status).toBe(200);
      const text = await res.text();
      expect(text).toContain('dryft_queue_depth{benchmark=');
      expect(text).toContain('dryft_official_run_gpu_seconds');
    }
  });

  it("bootstraps the agent token without anyone signed in, and refuses to overwrite another agent's", async () => {
    const first = await admin('agent-token', '--name', 'gpu-1', '--out', tokenFile);
    expect(first.status, first.stderr).toBe(0);
    expect(first.stderr).toMatch(/agent "gpu-1" created; token written to .* \(mode 0640\)/);
    expect(statSync(tokenFile).mode & 0o777).toBe(0o640);
    const token = readFileSync(tokenFile, 'utf8').trim();
    expect(checkTokenFormat(token, 'agent').ok).toBe(true);
    // Run again (a re-run of the deploy script): the token is kept.
    const again = await admin('agent-token', '--name', 'gpu-1', '--out', tokenFile);
    expect(again.status, again.stderr).toBe(0);
    expect(again.stderr).toMatch(/already exists and .* holds its token: kept/);
    expect(readFileSync(tokenFile, 'utf8').trim()).toBe(token);
    // Elsewhere, without --rotate: refused, saying what to do.
    const other = await admin('agent-token', '--name', 'gpu-1', '--out', path.join(work, 'elsewhere'));
    expect(other.status).toBe(1);
    expect(other.stderr).toMatch(
      /an agent named "gpu-1" already exists .*pass --rotate .* or choose another --name/,
    );
    expect(existsSync(path.join(work, 'elsewhere'))).toBe(false);
    // --rotate: a new token in the same file (the old one stops working).
    const rotated = await admin('agent-token', '--name', 'gpu-1', '--out', tokenFile, '--rotate');
    expect(rotated.status, rotated.stderr).toBe(0);
    expect(rotated.stderr).toMatch(/agent "gpu-1" has a new token/);
    expect(readFileSync(tokenFile, 'utf8').trim()).not.toBe(token);
    // A GPU box of its own: the token printed, for its docker/secrets/agent_token.
    const printed = await admin('agent-token', '--name', 'gpu-2', '--out', '-');
    expect(printed.status, printed.stderr).toBe(0);
    expect(printed.stderr).toMatch(/agent "gpu-2" created; token printed below/);
    expect(checkTokenFormat(printed.stdout.trim(), 'agent').ok, printed.stdout).toBe(true);
    const bad = await admin('agent-token', '--out', tokenFile);
    expect(bad.status).toBe(2);
    expect(bad.stderr).toMatch(/--name NAME is required/);
  });

  it(
    'the agent from docker/agent.json comes online, an organizer sees it, and a run goes through',
    { timeout: 180_000 },
    async () => {
      expect(existsSync(tokenFile)).toBe(true);
      const config = JSON.parse(readFileSync(path.join(ROOT, 'docker/agent.json'), 'utf8'));
      // The file as is, but for this machine: the hub's address, the mounts' folders, no GPU here.
      const gpus = spawnSync('nvidia-smi', ['-L'], { encoding: 'utf8' }).status === 0;
      const local = {
        ...config,
        apiUrl: replicas[0].url,
        tokenFile,
        workDir: path.join(work, 'agentwork'),
        repoDir: ROOT,
        harness: { ...config.harness, python: process.env.HARNESS_PYTHON ?? '/usr/bin/python3' },
        ...(gpus ? {} : { accelerator: 'cpu', slots: [{ index: 0, gpus: [] }] }),
      };
      mkdirSync(local.workDir, { recursive: true });
      const file = path.join(work, 'agent.json');
      writeFileSync(file, JSON.stringify(local));
      agent = start([AGENT_MAIN, '--config', file], { PATH: process.env.PATH, HOME: process.env.HOME });
      procs.push(agent);

      // The organizer signs in through GitHub OAuth, whose client secret came from a file.
      const r2 = replicas[1].url;
      const startRes = await fetch(`${r2}/api/auth/github`, { redirect: 'manual' });
      const stateCookie = startRes.headers
        .getSetCookie()
        .find((c) => c.startsWith('dryft_oauth_state='))!
        .split(';')[0];
      const authorize = new URL(startRes.headers.get('location')!);
      authorize.searchParams.set('login', organizer);
      const callback = new URL((await fetch(authorize, { redirect: 'manual' })).headers.get('location')!);
      expect(callback.origin).toBe(serviceEnv(stack.services['api-1']).PUBLIC_URL);
      const done = await fetch(`${r2}${callback.pathname}${callback.search}`, {
        redirect: 'manual',
        headers: { cookie: stateCookie },
      });
      const sessionCookie = done.headers.getSetCookie().find((c) => c.startsWith('dryft_session='))!;
      expect(sessionCookie).toMatch(/Secure/);
      const cookie = sessionCookie.split(';')[0];
      const me = await (await fetch(`${r2}/api/me`, { headers: { cookie } })).json();
      expect(me.user).toMatchObject({ login: organizer, isAdmin: true });
      const org = new HttpUser(r2, cookie, me.csrfToken, organizer);
      // The secret the hub sent GitHub is the one from GITHUB_CLIENT_SECRET_FILE.
      expect(exchanges.map((b) => new URLSearchParams(b).get('client_secret'))).toEqual([
        'oauth-secret-from-a-file',
      ]);

      // The agent is online, seen from the other replica.
      const agents = await until(
        'gpu-1 online',
        async () => {
          const list = (await org.get<{ name: string; status: string }[]>('/api/admin/agents')).body;
          return list.find((a) => a.name === 'gpu-1' && a.status === 'online') ? list : undefined;
        },
        procs,
      );
      expect(agents.map((a) => a.name).sort()).toEqual(['gpu-1', 'gpu-2']);

      // A toy-decode run: the upload lands in ARTIFACT_DIR, the agent downloads and runs it.
      await org.createTeam('Stack Team');
      const submission = await org.upload(await toyStarter());
      const run = await org.startRun(submission);
      const finished = await org.waitFor(run.id, terminal, 120_000);
      expect(finished.status, agent.output()).toBe('succeeded');
      const sql = new Client({ connectionString: db.url });
      await sql.connect();
      const sha = (await sql.query('SELECT sha256 FROM submissions WHERE id = $1', [submission])).rows[0]
        .sha256;
      await sql.end();
      expect(existsSync(path.join(work, 'artifacts', sha.slice(0, 2), sha.slice(2, 4), sha))).toBe(true);
    },
  );
});
