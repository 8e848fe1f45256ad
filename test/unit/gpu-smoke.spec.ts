import { spawnSync } from 'node:child_process';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = path.resolve(__dirname, '../..');
const hasGpu = spawnSync('nvidia-smi', ['-L'], { encoding: 'utf8' }).status === 0;

describe('gpu-smoke (scripts/gpu-smoke.mjs)', () => {
  it('--help prints the usage and exits 0 without looking for a GPU or starting anything', () => {
    const r = spawnSync(process.execPath, [path.join(ROOT, 'scripts/gpu-smoke.mjs'), '--help'], {
      cwd: ROOT,
      encoding: 'utf8',
      timeout: 60_000,
    });
    expect(r.status).toBe(0);
    expect(r.stdout).toContain('node scripts/gpu-smoke.mjs [--full]');
    for (const option of ['--cpu-rehearsal', '--budget-s N', '--only STEPS', '--out DIR'])
      expect(r.stdout).toContain(option);
    expect(r.stdout).not.toContain('SKIP gpu-smoke');
    expect(r.stdout).not.toContain('hub up');
  });

  // On a GPU box the same command runs the whole loop (minutes): that is the operator's job, not CI's.
  it.skipIf(hasGpu)('skips loudly and exits 0 on a machine without a GPU', () => {
    const r = spawnSync(process.execPath, [path.join(ROOT, 'scripts/gpu-smoke.mjs')], {
      cwd: ROOT,
      encoding: 'utf8',
      timeout: 60_000,
    });
    expect(r.status).toBe(0);
    expect(r.stdout).toMatch(/^SKIP gpu-smoke: no NVIDIA GPU on this machine \(.+\); nothing was run\./m);
    expect(r.stdout).toContain('--cpu-rehearsal');
    // Nothing was started: no hub, no agent, no table.
    expect(r.stdout).not.toContain('hub up');
    expect(r.stdout).not.toContain('| run |');
  });
});
