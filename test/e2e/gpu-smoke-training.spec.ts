import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { probeSandbox } from '../../apps/gpu-agent/src/sandbox';
import { createTestDatabase } from '../support/db';
import { available, pythonWithTorch } from '../support/prerequisites';
import { AGENT_MAIN, ROOT } from '../support/quickstart';

/**
 * gpu-smoke's training pass rehearsed on the CPU (`--cpu-rehearsal --training`): the same steps the
 * operator runs on a GPU box (the sample on Easy, the offload cheat, the out-of-memory submission,
 * Hard ranked on the smoke board, a cancel while training), through a real hub and the real jailed
 * agent, with seconds of training on recurrence-cpu's tasks. What it cannot check on a CPU (GPU
 * memory given back) its table says so.
 */
const python = pythonWithTorch();
const sandbox = probeSandbox();
const ok =
  existsSync(AGENT_MAIN) &&
  available('a Python with torch', python !== null, 'apt-get install python3-torch') &&
  available('bubblewrap with namespaces', sandbox.ok, `${sandbox.reason}; apt-get install bubblewrap`);

function runSmoke(args: string[], env: NodeJS.ProcessEnv) {
  return new Promise<{ code: number | null; stdout: string }>((resolve) => {
    const child = spawn(process.execPath, [path.join(ROOT, 'scripts/gpu-smoke.mjs'), ...args], {
      cwd: ROOT,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    child.stdout.on('data', (c) => (stdout += c));
    child.stderr.on('data', (c) => (stdout += c));
    child.once('exit', (code) => resolve({ code, stdout }));
  });
}

describe.skipIf(!ok)('gpu-smoke --cpu-rehearsal --training', () => {
  let db: { url: string; drop: () => Promise<void> };
  let out: string;
  beforeAll(async () => {
    db = await createTestDatabase();
    out = mkdtempSync(path.join(tmpdir(), 'gpu-smoke-training-'));
  });
  afterAll(async () => {
    await db?.drop().catch(() => undefined);
    if (out) rmSync(out, { recursive: true, force: true });
  });

  it('drives every training step through the hub and the agent, each with its verdict, and ranks Hard', async () => {
    const { code, stdout } = await runSmoke(
      ['--cpu-rehearsal', '--training', '--out', out, '--data', path.join(out, 'data')],
      { ...process.env, HARNESS_PYTHON: python!, GPU_SMOKE_DATABASE_URL: db.url },
    );
    const table = readFileSync(path.join(out, 'gpu-smoke-table.md'), 'utf8');
    expect(code, stdout.slice(-6000)).toBe(0);
    expect(table).toContain('gpu-smoke: all checks passed');
    expect(table).toContain('CPU rehearsal');
    // Each run's row: the verdict it expected and the one it got.
    const row = (label: string) => table.split('\n').find((l) => l.startsWith(`| ${label} |`)) ?? '';
    expect(row('sample, Easy')).toMatch(/\| succeeded \| succeeded \| \d+\.\d\d \|/);
    expect(row('sample, Easy')).toMatch(/accuracy \d+\.\d\d % \(chance 3\.45 %\), trained/);
    expect(row('sample, Easy')).toMatch(/\d+ updates \/ \d+ steps/);
    expect(row('sample, Easy')).toContain('memory: not checked (CPU)');
    expect(row('offload cheat, Easy')).toContain('| failed rule_violation | failed rule_violation |');
    expect(row('out of memory, Easy')).toContain('| failed memory_limit | failed memory_limit |');
    expect(row('cancel during training')).toContain('| canceled | canceled |');
    expect(table.split('\n').find((l) => l.startsWith('| sample, Hard'))).toMatch(
      /\| hard official \| succeeded \| succeeded \|/,
    );
    for (const check of [
      'sample, Easy: accuracy far above chance',
      'sample, Easy: loss curve live',
      'slot usable after the out-of-memory run',
      'Hard ranked on the smoke board',
      'cancel of a training run',
    ])
      expect(table).toMatch(new RegExp(`\\| ${check.replace(/[()]/g, '\\$&')} \\| PASS \\|`));
    // The loss curve reached the /live watcher while the run went on, not only in the stored result.
    const live = /\| sample, Easy: loss curve live \| PASS \| (\d+) loss points reached/.exec(table);
    expect(Number(live?.[1])).toBeGreaterThan(0);
  }, 150_000);
});
