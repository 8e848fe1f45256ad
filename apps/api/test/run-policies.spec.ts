import { describe, expect, it } from 'vitest';
import { EventBus } from '../src/common/event-bus';
import type { RunLifecycleService } from '../src/runs/run-lifecycle.service';
import { RunPoliciesService } from '../src/runs/run-policies.service';
import type { RunQueue } from '../src/runs/run-queue';
import type { RunViews } from '../src/runs/run-views';
import type { RunEntity } from '../src/runs/run.entity';
import type { RunsRepository } from '../src/runs/runs.repository';
import { aRun } from './builders';

/** The policies on a real bus, over stand-ins that record what they were asked. */
function policies(opts: { unstarted?: RunEntity[]; limited?: RunEntity[] } = {}) {
  const bus = new EventBus();
  const calls: string[] = [];
  const emitted: { event: string; payload: unknown }[] = [];
  const deliver = bus.emit.bind(bus);
  // Every event (the test's and the policies') is recorded, then delivered.
  const emit = ((event: string, payload: unknown) => {
    emitted.push({ event, payload });
    deliver(event as never, payload as never);
  }) as typeof bus.emit;
  bus.emit = emit;
  const runs = {
    unstartedOf: async (who: unknown) => {
      calls.push(`unstarted ${JSON.stringify(who)}`);
      return opts.unstarted ?? [];
    },
  };
  const queue = {
    setLimitForUnfinished: async (benchmarkId: string, seconds: number) => {
      calls.push(`limit ${benchmarkId} ${seconds}`);
      return opts.limited ?? [];
    },
    invalidateBefore: async (benchmarkId: string, version: number, reason: string) => {
      calls.push(`invalidate ${benchmarkId} <${version}: ${reason}`);
      return 1;
    },
  };
  const lifecycle = {
    cancelRun: async (runId: string, message: string, reason: string) => {
      calls.push(`cancel ${runId}: ${message} (${reason})`);
      return { changed: true };
    },
  };
  const views = {
    views: async (rs: RunEntity[]) => {
      calls.push(`views ${rs.length}`);
      return rs.map((r) => ({ id: r.id }));
    },
  };
  const service = new RunPoliciesService(
    runs as unknown as RunsRepository,
    queue as unknown as RunQueue,
    lifecycle as unknown as RunLifecycleService,
    views as unknown as RunViews,
    bus,
  );
  service.onModuleInit();
  return { service, bus, emit, calls, emitted };
}

/** Handlers run on the bus after the emitter's turn: a few turns let them finish. */
const settle = () => new Promise((r) => setTimeout(r, 0));

describe('RunPoliciesService: what other domains’ events do to runs', () => {
  it('a ban cancels each unstarted run of its user, saying who was banned and why', async () => {
    const [a, b] = [aRun({ status: 'queued' }), aRun({ status: 'assigned' })];
    const { emit, calls } = policies({ unstarted: [a, b] });
    emit('ban.created', {
      banId: 'x',
      userId: 'u1',
      teamId: null,
      benchmarkId: 'toy-decode',
      reason: 'spam',
    });
    await settle();
    expect(calls).toEqual([
      'unstarted {"userId":"u1","teamId":null,"benchmarkId":"toy-decode"}',
      `cancel ${a.id}: Canceled before it started: its author was banned by an organizer (spam). (banned: spam)`,
      `cancel ${b.id}: Canceled before it started: its author was banned by an organizer (spam). (banned: spam)`,
    ]);
  });

  it('a team ban names the team', async () => {
    const run = aRun({ status: 'queued' });
    const { emit, calls } = policies({ unstarted: [run] });
    emit('ban.created', { banId: 'x', userId: null, teamId: 't1', benchmarkId: null, reason: 'rigging' });
    await settle();
    expect(calls[1]).toBe(
      `cancel ${run.id}: Canceled before it started: the team was banned by an organizer (rigging). (banned: rigging)`,
    );
  });

  it('new rules invalidate older official results, then the board is rebuilt', async () => {
    const { emit, calls, emitted } = policies();
    emit('benchmark.rules_changed', {
      benchmarkId: 'toy-decode',
      previousVersion: 1,
      rulesVersion: 2,
      reason: 'new prompts',
    });
    await settle();
    expect(calls).toEqual(['invalidate toy-decode <2: Rules changed to version 2: new prompts']);
    expect(emitted.map((e) => e.event)).toEqual(['benchmark.rules_changed', 'leaderboard.changed']);
    expect(emitted[1].payload).toEqual({ benchmarkId: 'toy-decode' });
  });

  it('a new whole-run limit moves the deadlines of runs in progress and announces each run, in one read of views', async () => {
    const assigned = aRun({ status: 'assigned', deadlineAt: new Date(120_000) });
    const queued = aRun({ status: 'queued', deadlineAt: null, agentId: null });
    const { emit, calls, emitted } = policies({ limited: [assigned, queued] });
    emit('benchmark.settings_changed', { benchmarkId: 'toy-decode', runTimeLimitSeconds: 120 });
    await settle();
    expect(calls).toEqual(['limit toy-decode 120', 'views 2']);
    expect(emitted.slice(1)).toEqual([
      {
        event: 'run.deadline_changed',
        payload: { runId: assigned.id, agentId: assigned.agentId, deadlineAt: 120_000 },
      },
      { event: 'run.status', payload: { run: { id: assigned.id } } },
      { event: 'run.status', payload: { run: { id: queued.id } } },
    ]);
  });
});
