import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createConnection } from 'node:net';

/**
 * What the fuller tests need beyond Node: Chromium, bubblewrap, Redis, a Python with torch. On a
 * developer's bare machine a missing one skips its tests, loudly; under CI (`CI=true`, as `.ci/run`
 * runs) it fails instead, because CI installs all of them and must never skip.
 */
export const STRICT = process.env.CI === 'true' || process.env.DRYFT_REQUIRE_ALL === '1';

export function available(what: string, ok: boolean, howToGetIt: string): boolean {
  if (ok) return true;
  if (STRICT)
    throw new Error(`${what} is not available (${howToGetIt}): CI installs it and must not skip these tests`);
  console.warn(`\n[tests] SKIPPING the tests that need ${what}: not available here (${howToGetIt})\n`);
  return false;
}

export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

export const hasChromium = () =>
  available('Chromium', existsSync(CHROMIUM), 'apt-get install chromium, or set CHROMIUM_PATH');

/** The interpreter the harness tests and the local agent use for torch benchmarks, if one has torch. */
export function pythonWithTorch(): string | null {
  for (const candidate of [process.env.HARNESS_PYTHON, '/usr/bin/python3', 'python3'].filter(
    Boolean,
  ) as string[]) {
    if (spawnSync(candidate, ['-c', 'import torch'], { stdio: 'ignore' }).status === 0) return candidate;
  }
  return null;
}

/** Whether something accepts a TCP connection at the Redis URL's host and port within a second. */
function redisReachable(url: string): Promise<boolean> {
  const u = new URL(url);
  return new Promise((resolve) => {
    const s = createConnection({ host: u.hostname, port: Number(u.port || 6379) });
    s.once('connect', () => {
      s.end();
      resolve(true);
    });
    s.once('error', () => resolve(false));
    setTimeout(() => {
      s.destroy();
      resolve(false);
    }, 1_000).unref();
  });
}

/** Redis for the scale-out tests: reachable, or a loud skip (a failure under CI). */
export const hasRedis = async (url: string): Promise<boolean> =>
  available(`Redis at ${url}`, await redisReachable(url), 'set REDIS_URL or start redis-server');
