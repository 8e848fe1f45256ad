import * as path from 'node:path';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { busyCheckers } from '../support/busy-checkers';
import { ROOT, runCli, teamToken } from '../support/cli';
import { startTestHub, TestHub } from '../support/hub';

/**
 * Issue 30: the `dryft` CLI (a real child process) against the real API honours 503 `checker_busy`
 * and 429 `rate_limited`: it waits the Retry-After, says so, and sends the upload again with the
 * same Idempotency-Key, at most 3 times and 60 s of waiting; past that it stops and says when to
 * run the command again. Nothing is stored twice.
 */
const ENGINE = path.join(ROOT, 'starters/toy-decode/engine');

async function cliOn(hub: TestHub, login: string) {
  const { token } = await teamToken(hub.baseUrl, login);
  const env = {
    DRYFT_API_URL: hub.baseUrl,
    DRYFT_TOKEN: token,
    XDG_CONFIG_HOME: path.join(mkdtempSync(path.join(tmpdir(), 'dryft-cli-busy-')), 'config'),
    DRYFT_NO_PROGRESS: '1',
  };
  const stored = async () => {
    const res = await fetch(`${hub.baseUrl}/api/submissions?limit=100`, {
      headers: { authorization: `Bearer ${token}` },
    });
    return ((await res.json()) as { items: { id: string }[] }).items.map((s) => s.id);
  };
  return { env, stored };
}

describe('CLI uploads while every upload checker is busy (503 checker_busy)', () => {
  let hub: TestHub;
  beforeAll(async () => {
    hub = await startTestHub({ env: { UPLOAD_CHECK_WORKERS: '1', UPLOAD_CHECK_QUEUE: '0' } });
  });
  afterAll(async () => hub?.close());

  it('waits the Retry-After, says the hub is busy checking uploads, and stores the upload once', async () => {
    const { env, stored } = await cliOn(hub, 'busy-cli');
    const busy = busyCheckers(hub, 2);
    try {
      const r = await runCli(['submit', ENGINE, '--benchmark', 'toy-decode'], env);
      expect(r.code, r.stderr).toBe(0);
      expect(busy.refused()).toBe(2);
      expect(r.stderr).toContain(
        'The hub is busy checking uploads; retrying in 1 s (Retry-After, retry 1 of at most 3)',
      );
      expect(r.stderr).toContain('retry 2 of at most 3');
      expect(r.stderr).not.toContain('retry 3 of');
      const id = r.stdout.trim();
      expect(id).toMatch(/^[0-9a-f-]{36}$/);
      expect(await stored()).toEqual([id]);
    } finally {
      busy.restore();
    }
  });

  it('still busy after 3 retries: exit 5, nothing stored, and when to run the command again', async () => {
    const { env, stored } = await cliOn(hub, 'busy-cli-2');
    const busy = busyCheckers(hub, 100);
    try {
      const r = await runCli(['submit', ENGINE, '--benchmark', 'toy-decode'], env);
      expect(r.code).toBe(5);
      expect(busy.refused()).toBe(4);
      expect(r.stderr).toContain('retry 3 of at most 3');
      expect(r.stderr).toMatch(
        /The hub is busy checking uploads: Every upload checker of this hub is busy .* nothing was stored\. Send it again in 1 s \(Retry-After\)\.\nRun the command again after \d\d:\d\d:\d\d UTC \(in 1 s\); the CLI already waited and retried 3 times\./,
      );
      expect(await stored()).toEqual([]);
    } finally {
      busy.restore();
    }
  });

  it('a Retry-After longer than DRYFT_MAX_RATE_LIMIT_WAIT is not sat out: one request, and when to retry', async () => {
    const { env, stored } = await cliOn(hub, 'busy-cli-3');
    const busy = busyCheckers(hub, 100, 30);
    try {
      const r = await runCli(['submit', ENGINE, '--benchmark', 'toy-decode'], {
        ...env,
        DRYFT_MAX_RATE_LIMIT_WAIT: '10',
      });
      expect(r.code).toBe(5);
      expect(busy.refused()).toBe(1);
      expect(r.stderr).not.toContain('retrying in');
      expect(r.stderr).toMatch(/Run the command again after \d\d:\d\d:\d\d UTC \(in 30 s\)\./);
      expect(await stored()).toEqual([]);
    } finally {
      busy.restore();
    }
  });
});

describe('CLI uploads past the upload rate limit (429 rate_limited)', () => {
  let hub: TestHub;
  beforeAll(async () => {
    hub = await startTestHub({ env: { RATE_LIMIT_UPLOADS: '1/8' } });
  });
  afterAll(async () => hub?.close());

  it('the second upload within the window waits its Retry-After and is stored once', async () => {
    const { env, stored } = await cliOn(hub, 'limited-cli');
    const first = await runCli(['submit', ENGINE, '--benchmark', 'toy-decode'], env);
    expect(first.code, first.stderr).toBe(0);
    const second = await runCli(['submit', ENGINE, '--benchmark', 'toy-decode'], env);
    expect(second.code, second.stderr).toBe(0);
    expect(second.stderr).toMatch(
      /The hub is rate limiting this request \(Too many uploads .*\); retrying in \d+ s \(Retry-After, retry 1 of at most 3\)/,
    );
    const ids = [first.stdout.trim(), second.stdout.trim()];
    expect(new Set(ids).size).toBe(2);
    expect((await stored()).sort()).toEqual(ids.sort());
  });
});
