import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { AgentToServer } from '@dryft/libs';
import type { AgentCapabilities, RunBatch } from '@dryft/libs';
import { AgentConnections } from '../src/agents/agent-connections';
import { AgentSockets } from '../src/agents/agent-sockets';
import { AgentsGateway } from '../src/agents/agents.gateway';
import type { AgentsService } from '../src/agents/agents.service';
import type { Dispatcher } from '../src/agents/dispatcher.service';
import { notFound } from '../src/common/errors';
import { EventBus } from '../src/common/event-bus';
import type { Config } from '../src/config/config';
import type { RateLimiter } from '../src/rate-limits/rate-limiter';
import type { RunLifecycleService } from '../src/runs/run-lifecycle.service';
import type { AgentSocket, AgentsNamespace, SocketServer } from '../src/socket/socket-server';
import { bindGateway, subscribedEvents } from './builders/gateway-calls';
import { fakeLive } from './builders/live-sockets';

const cpu: AgentCapabilities = {
  accelerator: 'cpu',
  gpuModel: null,
  gpuCount: 0,
  driver: null,
  harnessVersion: '1',
  agentVersion: '1',
  benchmarks: [],
  cannotRun: {},
};

/** The gateway over a lifecycle the test controls; `/agents` in memory, every write recorded. */
function world(over: Partial<Record<keyof RunLifecycleService, unknown>> = {}) {
  const live = fakeLive();
  const calls: string[] = [];
  const kicks: boolean[] = [];
  const disconnected: string[] = [];
  const nsp = Object.assign(live.nsp, {
    in: (room: string) => ({
      disconnectSockets: () => void disconnected.push(room),
      except: () => ({ disconnectSockets: () => undefined }),
    }),
  }) as unknown as AgentsNamespace;
  const sockets = new AgentSockets({ agents: nsp, clustered: false } as unknown as SocketServer);
  const lifecycle = {
    markStarted: async (runId: string) => void calls.push(`started ${runId}`),
    storeBatch: async (runId: string, _a: string, b: RunBatch) => {
      calls.push(`batch ${b.seq}`);
      return { ok: true, ackedSeq: b.seq };
    },
    finish: async (runId: string) => (calls.push(`finished ${runId}`), { ok: true }),
    handBack: async () => true,
    heartbeat: async () => ['gone'],
    reconcile: async () => [],
    failInfra: async (runId: string) => (calls.push(`failed ${runId}`), true),
    ...over,
  } as unknown as RunLifecycleService;
  const agents = {
    find: async (id: string) => ({ id, name: 'gpu-1', revokedAt: null, draining: false }),
    markReady: async () => undefined,
    markHeartbeat: async () => undefined,
    markDisconnected: async () => undefined,
  } as unknown as AgentsService;
  const connections = new AgentConnections();
  const gateway = new AgentsGateway(
    sockets,
    agents,
    connections,
    lifecycle,
    { kick: (o: { everywhere: boolean }) => void kicks.push(o.everywhere) } as unknown as Dispatcher,
    new EventBus(),
    { socketAttempt: async () => undefined } as unknown as RateLimiter,
    { AGENT_LEASE_SECONDS: 30 } as Config,
  );
  const connect = (): AgentSocket => {
    const socket = live.socket({ agentId: 'a1', agentName: 'gpu-1' }) as unknown as AgentSocket;
    gateway.handleConnection(socket);
    bindGateway(gateway, socket);
    return socket;
  };
  const send = (socket: AgentSocket, event: string, ...args: unknown[]) =>
    live.send(socket as never, event, ...args) as Promise<Record<string, unknown>>;
  return { gateway, live, connect, send, calls, kicks, disconnected, connections };
}

const runId = randomUUID();
const batch = (seq: number): RunBatch => ({
  runId,
  seq,
  entries: [{ type: 'log', n: seq, ts: 1, stream: 'out', text: `line ${seq}` }],
});

describe('AgentsGateway handlers', () => {
  it('has a handler for every event of the contract, and for nothing else', () => {
    expect([...subscribedEvents(world().gateway).keys()].sort()).toEqual(Object.keys(AgentToServer).sort());
  });

  it('agent.ready: the agent is registered here with its slots, told its lease, and dispatch runs after the ack', async () => {
    const w = world();
    const socket = w.connect();
    const ack = await w.send(socket, 'agent.ready', {
      capabilities: cpu,
      slots: [{ index: 0, gpus: [] }],
      activeRuns: [],
    });
    expect(ack).toMatchObject({
      ok: true,
      agentId: 'a1',
      name: 'gpu-1',
      leaseSeconds: 30,
      heartbeatSeconds: 10,
    });
    expect(w.connections.get('a1')?.slots).toEqual([{ index: 0, gpus: [] }]);
    expect(w.kicks).toEqual([]);
    await new Promise((r) => setImmediate(r));
    expect(w.kicks).toEqual([false]);
  });

  it('agent.heartbeat answers the runs to stop; run.started reaches the lifecycle', async () => {
    const w = world();
    const socket = w.connect();
    expect(await w.send(socket, 'agent.heartbeat', { activeRuns: [runId] })).toEqual({
      ok: true,
      stop: ['gone'],
    });
    expect(await w.send(socket, 'run.started', { runId })).toEqual({ ok: true });
    expect(w.calls).toEqual([`started ${runId}`]);
  });

  it("applies a run's batches in the order they arrived, a slow one included", async () => {
    let release!: () => void;
    const slow = new Promise<void>((r) => (release = r));
    const order: number[] = [];
    const w = world({
      storeBatch: async (_r: string, _a: string, b: RunBatch) => {
        if (b.seq === 1) await slow;
        order.push(b.seq);
        return { ok: true, ackedSeq: b.seq };
      },
    });
    const socket = w.connect();
    const first = w.send(socket, 'run.batch', batch(1));
    const second = w.send(socket, 'run.batch', batch(2));
    await new Promise((r) => setImmediate(r));
    expect(order).toEqual([]);
    release();
    expect(await second).toEqual({ ok: true, ackedSeq: 2 });
    expect(await first).toEqual({ ok: true, ackedSeq: 1 });
    expect(order).toEqual([1, 2]);
  });

  it('run.finished: the verdict waits for the batches sent before it, then reaches the lifecycle', async () => {
    let release!: () => void;
    const slow = new Promise<void>((r) => (release = r));
    const w = world({
      storeBatch: async (_r: string, _a: string, b: RunBatch) => {
        await slow;
        w.calls.push(`batch ${b.seq}`);
        return { ok: true, ackedSeq: b.seq };
      },
    });
    const socket = w.connect();
    const stored = w.send(socket, 'run.batch', batch(1));
    const finished = w.send(socket, 'run.finished', {
      runId,
      lastSeq: 1,
      result: {
        type: 'result',
        status: 'failed',
        failureCode: 'infra_error',
        message: 'engine died',
        score: null,
        workloads: [],
        metrics: {},
      },
      canceled: false,
      exitCode: 1,
    });
    await new Promise((r) => setImmediate(r));
    expect(w.calls).toEqual([]);
    release();
    expect(await finished).toEqual({ ok: true });
    expect(await stored).toEqual({ ok: true, ackedSeq: 1 });
    expect(w.calls).toEqual(['batch 1', `finished ${runId}`]);
    expect(w.connections.get('a1')).toBeUndefined();
  });

  it('refuses a malformed payload for good, and an unknown event, without calling the lifecycle', async () => {
    const w = world();
    const socket = w.connect();
    expect(await w.send(socket, 'run.batch', { runId: 'not-a-uuid', seq: 1, entries: [] })).toMatchObject({
      ok: false,
      final: true,
      error: { code: 'invalid_payload' },
    });
    expect(await w.send(socket, 'run.explode', {})).toMatchObject({
      ok: false,
      error: { code: 'unknown_event' },
    });
    expect(w.calls).toEqual([]);
  });

  it('a refusal resending cannot fix is final; a database outage is to be resent', async () => {
    const w = world({
      markStarted: async () => {
        throw Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' });
      },
      handBack: async () => {
        throw notFound('run_not_found', 'No such run.');
      },
    });
    const socket = w.connect();
    expect(await w.send(socket, 'run.started', { runId })).toEqual({
      ok: false,
      error: {
        code: 'database_unavailable',
        message: "The hub's database is unavailable right now; resend later.",
      },
    });
    expect(await w.send(socket, 'run.handback', { runId, reason: 'shutting down' })).toEqual({
      ok: false,
      final: true,
      error: { code: 'run_not_found', message: 'No such run.' },
    });
  });

  it('run.handback: a requeued run nudges every replica; a started one is refused', async () => {
    const w = world();
    expect(await w.send(w.connect(), 'run.handback', { runId, reason: 'shutting down' })).toEqual({
      ok: true,
    });
    expect(w.kicks).toEqual([true]);
    const started = world({ handBack: async () => false });
    expect(await started.send(started.connect(), 'run.handback', { runId, reason: 'x' })).toMatchObject({
      error: { code: 'run_started' },
    });
  });

  it('the writes go through AgentSockets to the agent room: cancel, deadline, drain; revoke says why before the disconnect', async () => {
    const w = world();
    w.gateway.onApplicationBootstrap();
    const bus = (w.gateway as unknown as { bus: EventBus }).bus;
    bus.emit('run.cancel_requested', { runId, agentId: 'a1', reason: 'organizer' });
    bus.emit('run.deadline_changed', { runId, agentId: 'a1', deadlineAt: 5 });
    bus.emit('run.cancel_requested', { runId, agentId: null, reason: 'queued only' });
    await Promise.resolve();
    w.gateway.drain('a1', false);
    await w.gateway.revoke('a1', [runId]);
    expect(w.live.sent.map((s) => [s.to, s.event, s.payload])).toEqual([
      ['agent:a1', 'run.cancel', { runId, reason: 'organizer' }],
      ['agent:a1', 'run.deadline', { runId, deadlineAt: 5 }],
      ['agent:a1', 'agent.drain', { draining: false }],
      ['agent:a1', 'agent.revoked', expect.objectContaining({ code: 'agent_revoked' })],
    ]);
    expect(w.disconnected).toEqual(['agent:a1']);
    expect(w.kicks).toEqual([true]);
    expect(w.calls).toEqual([`failed ${runId}`]);
  });
});
