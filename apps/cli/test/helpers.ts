import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { PassThrough } from 'node:stream';
import { generateToken } from '@dryft/libs/node';
import { runCli } from '../src/cli';
import type { SocketFactory } from '../src/live';

export interface Captured {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs the CLI in-process with captured streams (no TTY unless asked). */
export async function cli(
  argv: string[],
  env: Record<string, string | undefined> = {},
  opts: {
    stdin?: string;
    socketFactory?: SocketFactory;
    cwd?: string;
    tty?: boolean;
    /** stdout is a terminal too (colours on, as for a person reading it). */
    stdoutTty?: boolean;
  } = {},
): Promise<Captured> {
  const stdout = new PassThrough();
  const stderr = new PassThrough();
  const stdin = new PassThrough();
  let out = '';
  let err = '';
  stdout.on('data', (c) => (out += c));
  stderr.on('data', (c) => (err += c));
  if (opts.tty) {
    // a terminal to ask on (the official-run question)
    Object.assign(stdin, { isTTY: true });
    Object.assign(stderr, { isTTY: true });
  }
  if (opts.stdoutTty) Object.assign(stdout, { isTTY: true });
  stdin.end(opts.stdin ?? '');
  const code = await runCli(argv, {
    streams: { stdout, stderr, stdin },
    env: {
      HOME: '/nonexistent-home',
      DRYFT_POLL_MS: '50',
      DRYFT_RETRY_BASE_MS: '10',
      ...env,
    } as NodeJS.ProcessEnv,
    socketFactory: opts.socketFactory,
    cwd: opts.cwd,
  });
  return { code, stdout: out, stderr: err };
}

export const TOKEN = generateToken('pat');

export interface Recorded {
  method: string;
  path: string;
  headers: IncomingMessage['headers'];
  body: string;
}

/** A tiny real HTTP server whose routes the test writes. */
export async function stubServer(
  handler: (req: Recorded, res: ServerResponse) => void | Promise<void>,
): Promise<{ url: string; server: Server; requests: Recorded[]; close: () => Promise<void> }> {
  const requests: Recorded[] = [];
  const server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const rec = {
      method: req.method ?? 'GET',
      path: req.url ?? '/',
      headers: req.headers,
      body: Buffer.concat(chunks).toString('utf8'),
    };
    requests.push(rec);
    await handler(rec, res);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}`,
    server,
    requests,
    close: () =>
      new Promise((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

export function json(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
}

export function runView(over: Partial<Record<string, unknown>> = {}) {
  return {
    id: '11111111-1111-4111-8111-111111111111',
    submissionId: '22222222-2222-4222-8222-222222222222',
    submissionName: 'upload #1',
    benchmarkId: 'toy-decode',
    teamId: '33333333-3333-4333-8333-333333333333',
    createdBy: '44444444-4444-4444-8444-444444444444',
    mode: 'public',
    tier: null,
    dataset: null,
    status: 'queued',
    failureCode: null,
    message: null,
    cancelReason: null,
    queuePosition: 1,
    score: null,
    rulesVersion: 1,
    invalidated: false,
    invalidatedReason: null,
    agentName: null,
    createdAt: '2026-11-30T05:00:00.000Z',
    assignedAt: null,
    startedAt: null,
    finishedAt: null,
    deadlineAt: null,
    lastLogSeq: 0,
    ...over,
  };
}

/** A run's result as GET /api/runs/:id/result answers it (no figures unless `over` gives them). */
export function resultBody(run: ReturnType<typeof runView>, over: Record<string, unknown> = {}) {
  return {
    run,
    score: run.score,
    interval: null,
    pairs: null,
    indicative: false,
    workloads: [],
    samples: [],
    checks: [],
    metrics: {},
    detail: null,
    complete: true,
    ...over,
  };
}

export function submissionView(over: Partial<Record<string, unknown>> = {}) {
  return {
    id: '22222222-2222-4222-8222-222222222222',
    benchmarkId: 'toy-decode',
    teamId: '33333333-3333-4333-8333-333333333333',
    name: 'upload #1',
    source: 'upload',
    sourceName: 'upload',
    number: 1,
    kind: 'archive',
    sha256: 'ab'.repeat(32),
    sizeBytes: 900,
    fileCount: 1,
    files: [{ path: 'engine.py', size: 1800 }],
    commitSha: null,
    createdBy: '44444444-4444-4444-8444-444444444444',
    createdAt: '2026-11-30T05:00:00.000Z',
    ...over,
  };
}

export function benchmarkView(over: Partial<Record<string, unknown>> = {}) {
  return {
    id: 'toy-decode',
    title: 'Toy decode (CPU)',
    summary: 's',
    kind: 'decode',
    ranks: 'teams',
    rulesVersion: 1,
    submissionsOpen: true,
    evaluationsOpen: true,
    runTimeLimitSeconds: 300,
    hardware: { accelerator: 'cpu', gpuModels: [] },
    submission: { type: 'archive' },
    scoring: { unit: 'points', description: 'd' },
    announcement: null,
    ...over,
  };
}
