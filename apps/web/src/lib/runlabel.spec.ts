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
  it('a run stored failed · timeout at its deadline (before these were canceled) reads "stopped · whole-run limit"', () => {
    expect(runStatusLabel(run({}))).toBe('stopped · whole-run limit');
    expect(stoppedAtWholeRunLimit(run({}))).toBe(true);
  });

  it('a per-sample timeout before the deadline stays "failed · timeout"', () => {
    expect(runStatusLabel(run({ finishedAt: '2026-12-02T00:40:00.000Z' }))).toBe('failed · timeout');
    expect(runStatusLabel(run({ failureCode: 'incorrect_output' }))).toBe('failed · incorrect_output');
  });

  it('a run canceled at the limit (by its agent or the hub’s sweep) names the limit', () => {
    const canceled = run({
      status: 'canceled',
      failureCode: null,
      cancelReason: 'whole-run time limit (120 s) exceeded',
    });
    expect(runStatusLabel(canceled)).toBe('canceled · whole-run limit');
    expect(runStatusLabel(run({ status: 'canceled', failureCode: null, cancelReason: 'superseded' }))).toBe(
      'canceled',
    );
    // A member's own words that mention the limit are not the limit's cancel.
    const member = run({
      status: 'canceled',
      failureCode: null,
      cancelReason: 'close to the whole-run time limit',
    });
    expect(runStatusLabel(member)).toBe('canceled');
    expect(stoppedAtWholeRunLimit(member)).toBe(false);
  });
});
