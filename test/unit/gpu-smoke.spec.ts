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
    for (const option of ['--cpu-rehearsal', '--training', '--budget-s N', '--only STEPS', '--out DIR'])
      expect(r.stdout).toContain(option);
    // Both products' step names, as --only takes them.
    expect(r.stdout).toContain(
      'starter-public,starter-official,calibrate,fast,fast-again,perturbed,view,cancel',
    );
    expect(r.stdout).toContain('train-easy,train-offload,train-oom,train-hard,train-cancel');
    expect(r.stdout).not.toContain('SKIP gpu-smoke');
    expect(r.stdout).not.toContain('hub up');
  });

  // Refused before anything starts (no hub, no GPU asked for): a wrong name would otherwise fail only
  // when its turn came, minutes into a lent machine's time.
  it.each([
    [['--training', '--full'], /--full is for decode/],
    [
      ['--training', '--only', 'train-easy,starter-public'],
      /unknown step starter-public; the training steps are train-easy, /,
    ],
    [['--only', 'cancel,train-oom'], /unknown step train-oom; the decode steps are starter-public, /],
    [['--cpu-rehearsal', '--training', '--only', 'easy'], /unknown step easy; the training steps/],
  ])('refuses %j with exit 2 and says why, starting nothing', (args, why) => {
    const r = spawnSync(process.execPath, [path.join(ROOT, 'scripts/gpu-smoke.mjs'), ...args], {
      cwd: ROOT,
      encoding: 'utf8',
      timeout: 60_000,
    });
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(why);
    expect(r.stdout).not.toContain('SKIP gpu-smoke');
    expect(r.stdout).not.toContain('hub up');
  });

  // Past the check, a machine without a GPU skips: the names were accepted.
  it.skipIf(hasGpu)('accepts the step names of the product it runs', () => {
    for (const args of [
      ['--training', '--only', 'train-cancel,train-easy'],
      ['--only', 'cancel,view'],
    ]) {
      const r = spawnSync(process.execPath, [path.join(ROOT, 'scripts/gpu-smoke.mjs'), ...args], {
        cwd: ROOT,
        encoding: 'utf8',
        timeout: 60_000,
      });
      expect(r.status).toBe(0);
      expect(r.stdout).toMatch(/^SKIP gpu-smoke: no NVIDIA GPU/m);
    }
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

  it.skipIf(hasGpu)('with --training, skips the same way and names the training rehearsal', () => {
    const r = spawnSync(process.execPath, [path.join(ROOT, 'scripts/gpu-smoke.mjs'), '--training'], {
      cwd: ROOT,
      encoding: 'utf8',
      timeout: 60_000,
    });
    expect(r.status).toBe(0);
    expect(r.stdout).toMatch(/^SKIP gpu-smoke: no NVIDIA GPU on this machine/m);
    expect(r.stdout).toContain('--cpu-rehearsal --training');
    expect(r.stdout).not.toContain('hub up');
  });
});
