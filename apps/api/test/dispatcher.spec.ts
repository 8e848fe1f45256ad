import { describe, expect, it } from 'vitest';
import type { AgentCapabilities, BenchmarkDefinition, HarnessSpec } from '@dryft/libs';
import type { LocalAgent } from '../src/agents/agent-connections';
import { AgentConnections } from '../src/agents/agent-connections';
import type { AgentsRepository } from '../src/agents/agents.repository';
import { Dispatcher } from '../src/agents/dispatcher.service';
import type { BenchmarkRegistry } from '../src/benchmarks/benchmark-registry';
import { Clock } from '../src/common/clock';
import type { EventBus } from '../src/common/event-bus';
import type { Config } from '../src/config/config';
import type { SocketServer } from '../src/socket/socket-server';
import { AgentSockets } from '../src/agents/agent-sockets';
import type { RunEntity } from '../src/runs/run.entity';
import type { ActiveRunRow, ClaimRequest, RunQueue } from '../src/runs/run-queue';
import type { RunsRepository } from '../src/runs/runs.repository';
import type { RunViews } from '../src/runs/run-views';
import { aRun } from './builders';

const SPEC: HarnessSpec = {
  kind: 'decode',
  benchmark: 'toy-decode',
  mode: 'public',
  rulesVersion: 1,
  model: { family: 'toy', path: 'models/toy/model.json' },
  baselineEngine: 'starters/toy-decode/engine',
  workloads: [{ name: 'w', batchSize: 2, promptLength: 32, maxNewTokens: 8, seed: 7 }],
  samplesPerWorkload: 2,
  warmupSamples: 0,
  limits: { loadSeconds: 20, sampleSeconds: 10, runSeconds: 60, memoryBytes: null },
  checks: { maxTtftMs: null, maxTpotMs: null, maxRatioSpreadPct: 50, logitTolerance: 0 },
  baseline: null,
} as HarnessSpec;

const cpu: AgentCapabilities = {
  accelerator: 'cpu',
  gpuModel: null,
  gpuCount: 0,
  driver: null,
  harnessVersion: 't',
  agentVersion: 't',
  benchmarks: [],
};
const defs = [
  { id: 'toy-decode', hardware: { accelerator: 'cpu', gpuModels: [] } },
  { id: 'qwen', hardware: { accelerator: 'gpu', gpuModels: ['NVIDIA H100 80GB HBM3'] } },
] as unknown as BenchmarkDefinition[];

/** The dispatcher over stand-ins: a queue holding `queued` runs, agents connected to this process. */
function dispatcher(opts: {
  queued: { mode: 'public' | 'official'; benchmarkId?: string }[];
  active?: ActiveRunRow[];
  unavailable?: string[];
  accept?: boolean;
  /** The database is gone when a refused run goes back (as at shutdown). */
  requeueFails?: boolean;
}) {
  const claims: ClaimRequest[] = [];
  const requeued: string[] = [];
  const waiting = opts.queued.map((q) =>
    aRun({ status: 'queued', spec: SPEC, benchmarkId: 'toy-decode', ...q }),
  );
  const queue = {
    queuedBenchmarks: async () => [...new Set(waiting.map((r) => r.benchmarkId))],
    activeRunsByAgent: async () => opts.active ?? [],
    markAssigned: async (req: ClaimRequest): Promise<RunEntity | null> => {
      claims.push(req);
      const i = waiting.findIndex(
        (r) =>
          req.benchmarkIds.includes(r.benchmarkId) &&
          ((r.mode === 'public' && req.allowPublic) || (r.mode === 'official' && req.allowOfficial)),
      );
      if (i < 0) return null;
      const [run] = waiting.splice(i, 1);
      return Object.assign(run, {
        status: 'assigned',
        agentId: req.agentId,
        slot: req.slot,
        deadlineAt: new Date(Date.now() + 60_000),
      });
    },
    requeue: async (runId: string) => {
      if (opts.requeueFails) throw new Error('Driver not Connected');
      return (requeued.push(runId), true);
    },
  };
  const repo = {
    unavailableAgentIds: async () => opts.unavailable ?? [],
    findSubmission: async () => ({ sha256: 'a'.repeat(64), kind: 'archive' }),
  };
  const registry = { all: () => defs, get: () => undefined };
  const runs = { view: async (r: RunEntity) => ({ id: r.id }), viewById: async () => null };
  const bus = { emit: () => undefined, on: () => () => undefined };
  const connections = new AgentConnections();
  const sent: { agent: string; runId: string }[] = [];
  const agent = (agentId: string, over: Partial<LocalAgent> = {}): LocalAgent => {
    const a: LocalAgent = {
      agentId,
      name: agentId,
      capabilities: cpu,
      slots: [{ index: 0, gpus: [] }],
      draining: false,
      coolDownUntil: 0,
      socket: {
        timeout: () => ({
          emitWithAck: async (_e: string, p: { runId: string }) => {
            sent.push({ agent: agentId, runId: p.runId });
            return { accepted: opts.accept ?? true };
          },
        }),
      } as unknown as LocalAgent['socket'],
      ...over,
    };
    connections.set(a);
    return a;
  };
  const d = new Dispatcher(
    repo as unknown as AgentsRepository,
    queue as unknown as RunQueue,
    { findBaseline: async () => null, findCalibration: async () => null } as unknown as RunsRepository,
    registry as unknown as BenchmarkRegistry,
    connections,
    new AgentSockets({} as SocketServer),
    runs as unknown as RunViews,
    new Clock(),
    bus as unknown as EventBus,
    { AGENT_LEASE_SECONDS: 30 } as Config,
  );
  const pass = async () => {
    await (d as unknown as { pass(): Promise<void> }).pass();
    await new Promise((r) => setTimeout(r, 10)); // assignments travel on their own
  };
  return { pass, agent, claims, requeued, sent, waiting };
}

describe('Dispatcher.pass', () => {
  it('fills each free slot of each fitting agent, with a lease and a one-time download token', async () => {
    const w = dispatcher({ queued: [{ mode: 'public' }, { mode: 'public' }, { mode: 'public' }] });
    w.agent('a1', {
      slots: [
        { index: 0, gpus: [] },
        { index: 1, gpus: [] },
      ],
    });
    await w.pass();
    expect(w.claims.map((c) => [c.agentId, c.slot, c.benchmarkIds])).toEqual([
      ['a1', 0, ['toy-decode']],
      ['a1', 1, ['toy-decode']],
    ]);
    expect(w.claims[0].leaseUntil.getTime() - w.claims[0].now.getTime()).toBe(30_000);
    expect(w.claims[0].downloadTokenHash).toMatch(/^[0-9a-f]{64}$/);
    expect(w.sent.map((s) => s.agent)).toEqual(['a1', 'a1']);
    expect(w.waiting).toHaveLength(1);
  });

  it('skips draining, cooling-down and (by the database) unavailable agents, and busy slots', async () => {
    const w = dispatcher({
      queued: [{ mode: 'public' }],
      unavailable: ['revoked'],
      active: [
        {
          id: 'r',
          agentId: 'busy',
          slot: 0,
          mode: 'public',
          status: 'running',
          lastBatchSeq: 0,
          deadlineAt: null,
        },
      ],
    });
    w.agent('draining', { draining: true });
    w.agent('cooling', { coolDownUntil: Date.now() + 60_000 });
    w.agent('revoked');
    w.agent('busy');
    await w.pass();
    expect(w.claims).toEqual([]);
  });

  it('does nothing without a queued run or without an agent that fits the benchmark', async () => {
    const none = dispatcher({ queued: [] });
    none.agent('a1');
    await none.pass();
    expect(none.claims).toEqual([]);
    const gpuOnly = dispatcher({ queued: [{ mode: 'public', benchmarkId: 'qwen' }] });
    gpuOnly.agent('cpu-box');
    await gpuOnly.pass();
    expect(gpuOnly.claims).toEqual([]);
  });

  it('never lets an official run share the machine: the second slot takes nothing after one', async () => {
    const w = dispatcher({ queued: [{ mode: 'official' }, { mode: 'public' }] });
    w.agent('a1', {
      slots: [
        { index: 0, gpus: [] },
        { index: 1, gpus: [] },
      ],
    });
    await w.pass();
    expect(w.claims.map((c) => [c.slot, c.allowPublic, c.allowOfficial])).toEqual([
      [0, true, true],
      [1, false, false],
    ]);
    expect(w.waiting.map((r) => r.mode)).toEqual(['public']);
  });

  it('puts a refused assignment back in the queue and cools the agent down', async () => {
    const w = dispatcher({ queued: [{ mode: 'public' }], accept: false });
    const a = w.agent('a1');
    await w.pass();
    expect(w.sent).toHaveLength(1);
    expect(w.requeued).toEqual([w.sent[0].runId]);
    expect(a.coolDownUntil).toBeGreaterThan(Date.now());
  });

  it('a refused run that cannot go back to the queue (the database gone) is logged, never an unhandled rejection', async () => {
    const unhandled: unknown[] = [];
    const onUnhandled = (err: unknown) => unhandled.push(err);
    process.on('unhandledRejection', onUnhandled);
    try {
      const w = dispatcher({ queued: [{ mode: 'public' }], accept: false, requeueFails: true });
      w.agent('a1');
      await w.pass();
      await new Promise((r) => setTimeout(r, 20));
      expect(w.sent).toHaveLength(1);
      expect(w.requeued).toEqual([]);
      expect(unhandled).toEqual([]);
    } finally {
      process.off('unhandledRejection', onUnhandled);
    }
  });
});
