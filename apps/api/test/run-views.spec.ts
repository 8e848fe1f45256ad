import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { RunWaiting } from '@dryft/libs';
import { RunViews } from '../src/runs/run-views';
import type { RunEntity } from '../src/runs/run.entity';
import type { RunsRepository } from '../src/runs/runs.repository';
import type { WaitingService } from '../src/runs/waiting.service';
import { aRun } from './builders';

/** RunViews over stand-ins that count each read: a page must cost each read once, not once per run. */
function views(opts: { submissions?: Map<string, { sourceName: string; number: number }> } = {}) {
  const reads: string[] = [];
  const logins = new Map<string, string>();
  const repo = {
    viewNames: async (submissionIds: string[], userIds: string[]) => {
      reads.push(`names ${submissionIds.length} ${userIds.length}`);
      return { submissions: opts.submissions ?? new Map(), logins };
    },
    // The nth queued run given is nth in line.
    queuePositions: async (runs: RunEntity[]) => {
      reads.push('positions');
      return new Map(runs.filter((r) => r.status === 'queued').map((r, i) => [r.id, i + 1]));
    },
    samples: async () => [],
    checks: async () => [],
    metrics: async () => [
      { name: 'loss', step: 1, value: 3, elapsedMs: 10 },
      { name: 'loss', step: 2, value: 2, elapsedMs: 20 },
    ],
    findById: async () => null,
  };
  const waiting = {
    forRuns: async (queued: { run: RunEntity; position: number }[]) => {
      reads.push(`waiting ${queued.length}`);
      return queued.map(({ position }) => ({ position, reason: 'busy' }) as unknown as RunWaiting);
    },
  };
  const service = new RunViews(repo as unknown as RunsRepository, waiting as unknown as WaitingService);
  return { service, reads, logins };
}

describe('RunViews.views: a page of runs in a fixed number of reads', () => {
  it('reads names, queue places and the waiting estimate once for the whole page, whatever its length', async () => {
    for (const n of [1, 5, 20]) {
      const { service, reads } = views();
      const runs = Array.from({ length: n }, (_, i) => aRun({ status: i % 2 ? 'succeeded' : 'queued' }));
      const page = await service.views(runs);
      expect(page.map((v) => v.id)).toEqual(runs.map((r) => r.id));
      expect(reads).toEqual([`names ${n} ${n}`, 'positions', `waiting ${Math.ceil(n / 2)}`]);
    }
  });

  it('reads nothing for an empty page, and asks each submission and creator once', async () => {
    const { service, reads } = views();
    expect(await service.views([])).toEqual([]);
    expect(reads).toEqual([]);
    const submissionId = randomUUID();
    const createdBy = randomUUID();
    await service.views([aRun({ submissionId, createdBy }), aRun({ submissionId, createdBy })]);
    expect(reads[0]).toBe('names 1 1');
  });

  it('gives a queue place and a waiting estimate to queued runs only', async () => {
    const { service } = views();
    const [first, running, second] = await service.views([
      aRun({ status: 'queued' }),
      aRun({ status: 'running' }),
      aRun({ status: 'queued' }),
    ]);
    expect(first).toMatchObject({ queuePosition: 1, waiting: { position: 1 } });
    expect(running).toMatchObject({ queuePosition: null, waiting: null });
    expect(second).toMatchObject({ queuePosition: 2, waiting: { position: 2 } });
  });

  it('names the submission and the creator, and what a run without them is', async () => {
    const named = aRun();
    const { service, logins } = views({
      submissions: new Map([[named.submissionId!, { sourceName: 'fast-qwen', number: 3 }]]),
    });
    logins.set(named.createdBy, 'alice');
    const [a, baseline, calibration, missing] = await service.views([
      named,
      aRun({ mode: 'baseline', submissionId: null, teamId: null, hardware: 'cpu' }),
      aRun({ mode: 'calibration', submissionId: null, teamId: null, hardware: 'h200', calibrationPart: 2 }),
      aRun(),
    ]);
    expect(a).toMatchObject({ submissionName: 'fast-qwen #3', createdBy: 'alice' });
    expect(baseline.submissionName).toBe('baseline re-measure (cpu)');
    expect(calibration.submissionName).toBe('calibration of K (h200, part 2)');
    expect(missing).toMatchObject({ submissionName: 'unknown', createdBy: 'unknown' });
  });

  it('a view of one run is the page of that run', async () => {
    const { service, reads } = views();
    const run = aRun({ status: 'queued' });
    expect(await service.view(run)).toEqual((await service.views([run]))[0]);
    expect(reads).toEqual(['names 1 1', 'positions', 'waiting 1', 'names 1 1', 'positions', 'waiting 1']);
    expect(await service.viewById(randomUUID())).toBeNull();
  });
});

describe('RunViews.resultOf', () => {
  it('takes the last value of each metric from the curve when the verdict named none', async () => {
    const { service } = views();
    const result = await service.resultOf(aRun({ status: 'succeeded', metrics: null }));
    expect(result).toMatchObject({ metrics: { loss: 2 }, complete: true });
    expect(result.curve).toHaveLength(2);
    const named = await service.resultOf(aRun({ status: 'running', metrics: { loss: 1.5 } }));
    expect(named).toMatchObject({ metrics: { loss: 1.5 }, complete: false });
  });
});
