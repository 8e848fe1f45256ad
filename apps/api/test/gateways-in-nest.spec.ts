import { randomUUID } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import type { RunBatch } from '@dryft/libs';
import { AgentConnections } from '../src/agents/agent-connections';
import { AgentEvents } from '../src/agents/agent-events';
import { AgentSockets } from '../src/agents/agent-sockets';
import { AgentsGateway } from '../src/agents/agents.gateway';
import { AgentsService } from '../src/agents/agents.service';
import { Dispatcher } from '../src/agents/dispatcher.service';
import { AuthService } from '../src/auth/auth.service';
import { BenchmarkRegistry } from '../src/benchmarks/benchmark-registry';
import { Clock } from '../src/common/clock';
import { EventBus } from '../src/common/event-bus';
import { CONFIG, type Config } from '../src/config/config';
import { PublicSnapshots } from '../src/leaderboards/public-snapshots';
import { LiveGateway } from '../src/live/live.gateway';
import { RemoteRunLines } from '../src/live/remote-run-lines';
import { RateLimiter } from '../src/rate-limits/rate-limiter';
import { RunLifecycleService } from '../src/runs/run-lifecycle.service';
import { RunLog } from '../src/runs/run-log';
import { RunViews } from '../src/runs/run-views';
import { RunsRepository } from '../src/runs/runs.repository';
import { SocketServer } from '../src/socket/socket-server';
import { TeamsService } from '../src/teams/teams.service';
import { eventSocket, nestGateway } from './builders/gateway-calls';

/**
 * The gateways as the running hub has them: in a Nest application on HubIoAdapter (Nest's own
 * context creator, pipes and filters), the collaborators faked. What the per-handler specs cannot
 * show: Nest calls the handlers in the order the events came, answers every failure on the ack, and
 * never emits its `exception` event.
 */
describe('the gateways inside Nest', () => {
  let close: (() => Promise<void>) | undefined;
  afterEach(async () => {
    await close?.();
    close = undefined;
  });

  const runId = randomUUID();
  const batch = (seq: number, lines = 1): RunBatch => ({
    runId,
    seq,
    entries: Array.from({ length: lines }, (_, i) => ({
      type: 'log' as const,
      n: seq * 10_000 + i,
      ts: 1,
      stream: 'out' as const,
      text: `line ${seq}`,
    })),
  });

  async function agents() {
    const calls: string[] = [];
    const lifecycle = {
      storeBatch: async (_r: string, _a: string, b: RunBatch) => (
        calls.push(`batch ${b.seq}`),
        { ok: true, ackedSeq: b.seq }
      ),
      finish: async () => (calls.push('finished'), { ok: true }),
      markStarted: async () => {
        throw new Error('boom');
      },
    };
    const g = await nestGateway(AgentsGateway, [
      { provide: AgentSockets, useValue: { takeOver: () => undefined } },
      { provide: AgentsService, useValue: { markDisconnected: async () => undefined } },
      { provide: AgentConnections, useValue: new AgentConnections() },
      { provide: RunLifecycleService, useValue: lifecycle },
      { provide: Dispatcher, useValue: { kick: () => undefined } },
      { provide: EventBus, useValue: new EventBus() },
      { provide: RateLimiter, useValue: { socketAttempt: async () => undefined } },
      { provide: CONFIG, useValue: { AGENT_LEASE_SECONDS: 30 } },
    ]);
    close = g.close;
    const client = eventSocket({ agentId: 'a1', agentName: 'gpu-1' });
    g.connect(client.socket);
    return { ...g, ...client, calls };
  }

  it('/agents: a large batch, a small one and the verdict sent at once are applied in that order', async () => {
    const a = await agents();
    expect(a.namespace).toBe('/agents');
    const acks = await Promise.all([
      a.send('run.batch', batch(1, 2000)),
      a.send('run.batch', batch(2)),
      a.send('run.finished', {
        runId,
        lastSeq: 2,
        result: {
          type: 'result',
          status: 'failed',
          failureCode: 'infra_error',
          message: 'x',
          score: null,
          workloads: [],
          metrics: {},
        },
        canceled: false,
        exitCode: 1,
      }),
    ]);
    expect(acks).toEqual([{ ok: true, ackedSeq: 1 }, { ok: true, ackedSeq: 2 }, { ok: true }]);
    expect(a.calls).toEqual(['batch 1', 'batch 2', 'finished']);
    expect(a.emitted).toEqual([]);
  });

  it("/agents: a malformed payload, extra arguments and a throwing handler are answered on the ack, never as 'exception'", async () => {
    const a = await agents();
    expect(await a.send('run.batch', { runId: 'not-a-uuid', seq: 1, entries: [] })).toMatchObject({
      ok: false,
      final: true,
      error: { code: 'invalid_payload' },
    });
    expect(await a.send('run.started', { runId }, 'extra')).toMatchObject({
      final: true,
      error: { code: 'invalid_payload', message: expect.stringContaining('takes one payload') },
    });
    expect(await a.send('run.started', { runId })).toEqual({
      ok: false,
      error: { code: 'internal_error', message: 'The server could not process this; resend later.' },
    });
    expect(await a.send('run.explode', {})).toMatchObject({ ok: false, error: { code: 'unknown_event' } });
    expect(a.emitted).toEqual([]);
    expect(a.calls).toEqual([]);
  });

  it('/live: answers on the ack through LiveAckFilter; the handshake is installed by afterInit', async () => {
    const used: unknown[] = [];
    const g = await nestGateway(LiveGateway, [
      { provide: SocketServer, useValue: { clustered: false } },
      { provide: AuthService, useValue: { authenticate: async () => null } },
      { provide: TeamsService, useValue: {} },
      { provide: RunViews, useValue: {} },
      { provide: RunsRepository, useValue: {} },
      { provide: RunLog, useValue: {} },
      {
        provide: PublicSnapshots,
        useValue: {
          leaderboard: async () => {
            throw Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' });
          },
        },
      },
      { provide: BenchmarkRegistry, useValue: { get: (id: string) => (id === 'toy' ? {} : undefined) } },
      { provide: AgentsService, useValue: {} },
      { provide: AgentEvents, useValue: { onChanged: () => () => undefined } },
      { provide: EventBus, useValue: new EventBus() },
      { provide: Clock, useValue: new Clock() },
      { provide: RemoteRunLines, useValue: { onLines: () => undefined, onReconnected: () => undefined } },
      { provide: RateLimiter, useValue: {} },
      { provide: CONFIG, useValue: { LIVE_ACCESS_SWEEP_SECONDS: 60 } as Config },
    ]);
    close = g.close;
    expect(g.namespace).toBe('/live');
    // The namespace Nest gave the gateway is the one the handshake went on.
    const nsp = (g.instance as { nsp: { _fns: unknown[] } }).nsp;
    used.push(...nsp._fns);
    expect(used).toHaveLength(1);
    const c = eventSocket({ principal: null });
    g.connect(c.socket);
    expect(await c.send('leaderboard.join', { benchmarkId: 7 })).toMatchObject({
      ok: false,
      error: { code: 'invalid_request' },
    });
    expect(await c.send('leaderboard.join', { benchmarkId: 'toy' })).toMatchObject({
      ok: false,
      error: { code: 'database_unavailable' },
    });
    expect(await c.send('run.join', { runId })).toMatchObject({ error: { code: 'sign_in_required' } });
    expect(await c.send('nope')).toMatchObject({ error: { code: 'unknown_event' } });
    expect(c.emitted).toEqual([]);
  });
});
