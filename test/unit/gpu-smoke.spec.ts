import { spawnSync } from 'node:child_process';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = path.resolve(__dirname, '../..');
const hasGpu = spawnSync('nvidia-smi', ['-L'], { encoding: 'utf8' }).status === 0;

describe('gpu-smoke (scripts/gpu-smoke.mjs)', () => {
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
