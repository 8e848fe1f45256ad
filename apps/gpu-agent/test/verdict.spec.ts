import { describe, expect, it } from 'vitest';
import type { HarnessResultEvent } from '@dryft/libs';
import { verdictFor } from '../src/verdict';

const harness: HarnessResultEvent = {
  type: 'result',
  status: 'succeeded',
  failureCode: null,
  message: 'All checks passed.',
  score: 140,
  workloads: [],
  metrics: {},
};
const base = {
  stopReason: null,
  stopMessage: '',
  preparationFailure: null,
  harnessResult: null,
  untrustedRunning: false,
  exitCode: 0,
} as const;

describe('verdictFor: what the agent reports when a run ends', () => {
  it("reports the harness's own verdict when nothing stopped the run", () => {
    expect(verdictFor({ ...base, harnessResult: harness })).toEqual({ verdict: harness, canceled: false });
  });

  it('lets why it stopped decide first: cancel, deadline, shutdown', () => {
    const stopped = (stopReason: 'cancel' | 'deadline' | 'shutdown') =>
      verdictFor({ ...base, harnessResult: harness, stopReason, stopMessage: 'by alice: wrong file' });
    expect(stopped('cancel')).toMatchObject({
      canceled: true,
      verdict: { status: 'failed', failureCode: null, message: 'Canceled: by alice: wrong file' },
    });
    // The whole-run limit is a cancel with its reason, not a timeout (the per-sample budget's).
    expect(stopped('deadline')).toEqual({
      canceled: true,
      cancelReason: 'run_time_limit',
      verdict: expect.objectContaining({
        status: 'failed',
        failureCode: null,
        message: "Canceled: the run exceeded the organizer's whole-run time limit.",
      }),
    });
    expect(stopped('cancel')).not.toHaveProperty('cancelReason');
    expect(stopped('shutdown')?.verdict).toMatchObject({ failureCode: 'infra_error' });
    expect(stopped('shutdown')?.verdict.message).toMatch(/not your engine's fault/);
  });

  it('reports nothing for a run the server ended (it has the final state)', () => {
    expect(verdictFor({ ...base, harnessResult: harness, stopReason: 'lost' })).toBeNull();
  });

  it("blames the engine for a harness that died without a verdict only while the engine's code ran", () => {
    expect(verdictFor({ ...base, untrustedRunning: true, exitCode: null })?.verdict).toMatchObject({
      failureCode: 'candidate_error',
    });
    const evaluator = verdictFor({ ...base, exitCode: 1 })?.verdict;
    expect(evaluator).toMatchObject({ failureCode: 'harness_error' });
    expect(evaluator?.message).toContain('exit 1');
  });

  it('prefers a preparation failure (download, unpack) to anything the harness said', () => {
    const prep = { ...harness, status: 'failed' as const, failureCode: 'infra_error' as const, score: null };
    expect(verdictFor({ ...base, preparationFailure: prep, harnessResult: harness })?.verdict).toBe(prep);
  });
});
