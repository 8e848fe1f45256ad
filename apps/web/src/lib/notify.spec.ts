import { describe, expect, it } from 'vitest';
import type { RunView } from '@dryft/libs';
import { runEndMessage } from './notify';

const run = (over: Partial<RunView>): RunView =>
  ({
    id: '3f2c9a10-0000-4000-8000-000000000000',
    submissionName: 'fast-qwen #3',
    mode: 'official',
    benchmarkId: 'toy-decode',
    status: 'succeeded',
    score: 112.44,
    failureCode: null,
    message: null,
    cancelReason: null,
    ...over,
  }) as RunView;

describe('run-end notification text', () => {
  it('says how each run ended', () => {
    expect(runEndMessage(run({}))).toEqual({
      title: 'Run 3f2c9a10 succeeded',
      body: 'fast-qwen #3 · official · toy-decode · 112.4 points',
    });
    expect(
      runEndMessage(run({ status: 'failed', failureCode: 'timeout', message: 'took too long' })).title,
    ).toBe('Run 3f2c9a10 failed (timeout)');
    expect(runEndMessage(run({ status: 'canceled', cancelReason: 'wrong file' })).body).toContain(
      'wrong file',
    );
  });
});
