import { describe, expect, it } from 'vitest';
import { runStatusLabel, stoppedAtWholeRunLimit } from './runlabel';

const run = (over: Partial<Parameters<typeof runStatusLabel>[0]>) => ({
  status: 'failed' as const,
  failureCode: 'timeout' as const,
  deadlineAt: '2026-12-02T01:00:00.000Z',
  finishedAt: '2026-12-02T01:00:03.000Z',
  cancelReason: null,
  ...over,
});

describe('the status of a run the whole-run limit stopped', () => {
  it('reads "stopped · whole-run limit", not "failed · timeout"', () => {
    expect(runStatusLabel(run({}))).toBe('stopped · whole-run limit');
    expect(stoppedAtWholeRunLimit(run({}))).toBe(true);
  });

  it('a per-sample timeout before the deadline stays "failed · timeout"', () => {
    expect(runStatusLabel(run({ finishedAt: '2026-12-02T00:40:00.000Z' }))).toBe('failed · timeout');
    expect(runStatusLabel(run({ failureCode: 'incorrect_output' }))).toBe('failed · incorrect_output');
  });

  it('the hub’s own deadline cancel names the limit', () => {
    const canceled = run({
      status: 'canceled',
      failureCode: null,
      cancelReason: 'whole-run time limit (120 s) exceeded',
    });
    expect(runStatusLabel(canceled)).toBe('canceled · whole-run limit');
    expect(runStatusLabel(run({ status: 'canceled', failureCode: null, cancelReason: 'superseded' }))).toBe(
      'canceled',
    );
  });
});
