import { Inject, Logger, OnApplicationBootstrap, OnModuleDestroy, UseFilters } from '@nestjs/common';
import {
  ConnectedSocket,
  MessageBody,
  OnGatewayConnection,
  OnGatewayInit,
  SubscribeMessage,
  WebSocketGateway,
} from '@nestjs/websockets';
import { agentRefusal, AgentToServer, parseRunBatch } from '@dryft/libs';
import type { Ack, AgentHeartbeatAck, AgentReadyAck, BatchAck } from '@dryft/libs';
import type { z } from 'zod';
import { EventBus } from '../common/event-bus';
import { LATENCY_TRACE, traceEnd, traceMark } from '../common/latency-trace';
import { RateLimiter } from '../rate-limits/rate-limiter';
import { CONFIG, Config } from '../config/config';
import type { AgentSocket, AgentsNamespace } from '../socket/socket-server';
import { answerUnknownEvents, authenticatedHandshake } from '../socket/socket-handlers';
import { receivedAt, ZodPayloadPipe } from '../socket/socket-payloads';
import { RunLifecycleService } from '../runs/run-lifecycle.service';
import { AgentConnections } from './agent-connections';
import { AgentSockets } from './agent-sockets';
import { AgentsAckFilter } from './agents-ack-filter';
import { AgentsService } from './agents.service';
import { Dispatcher } from './dispatcher.service';
import { forRun } from '../common/logging';

type AgentEvent = keyof typeof AgentToServer;
type Payload<E extends AgentEvent> = z.infer<(typeof AgentToServer)[E]>;

/**
 * The pipe of an event's payload: its schema in the contract; run.batch carries thousands of lines,
 * and its parser decides exactly as the schema, quicker.
 */
const body = <E extends AgentEvent>(event: E) =>
  MessageBody(
    new ZodPayloadPipe(
      (event === 'run.batch' ? { safeParse: parseRunBatch } : AgentToServer[event]) as unknown as z.ZodType<
        Payload<E>
      >,
    ),
  );

/**
 * The `/agents` namespace. Every connection authenticates with its agent token in the handshake
 * (also on every reconnect); every event is parsed with its zod schema before anything is done, and
 * a malformed or unknown event is answered with an error and logged, never thrown. What the hub
 * sends agents (cancel, deadline, drain, revoke, and the dispatcher's assignments) leaves through
 * AgentSockets, the namespace's one writer.
 *
 * A Nest gateway on HubIoAdapter: each `@SubscribeMessage` method gets the socket and its payload
 * parsed by ZodPayloadPipe, and its answer is the ack; what it throws is answered on the ack by
 * AgentsAckFilter (a final refusal when resending cannot help). A run's batches and verdict are
 * applied in the order they arrived (`serial`): every handler has the same parameters (the socket,
 * one synchronous pipe), so Nest calls them in the order the events arrived.
 */
@WebSocketGateway({ namespace: '/agents' })
@UseFilters(new AgentsAckFilter())
export class AgentsGateway
  implements OnGatewayInit, OnGatewayConnection, OnApplicationBootstrap, OnModuleDestroy
{
  private readonly logger = new Logger('AgentsGateway');
  /** One chain per run: a run's batches and verdict are applied in the order they arrived. */
  private readonly chains = new Map<string, Promise<unknown>>();
  private readonly unsubscribe: (() => void)[] = [];

  constructor(
    private readonly sockets: AgentSockets,
    private readonly agents: AgentsService,
    private readonly connections: AgentConnections,
    private readonly lifecycle: RunLifecycleService,
    private readonly dispatcher: Dispatcher,
    private readonly bus: EventBus,
    private readonly limiter: RateLimiter,
    @Inject(CONFIG) private readonly config: Config,
  ) {}

  get heartbeatSeconds(): number {
    return Math.max(0.2, this.config.AGENT_LEASE_SECONDS / 3);
  }

  /** The handshake, on every connection and reconnection (Nest connects the gateway during app.init). */
  afterInit(nsp: AgentsNamespace): void {
    nsp.use(authenticatedHandshake(this.logger, 'agent', (socket: AgentSocket) => this.handshake(socket)));
  }

  /** The agent token in `auth.token` (rate-limited per address); who it is goes on `socket.data`. */
  async handshake(socket: AgentSocket): Promise<void> {
    await this.limiter.socketAttempt('agents', socket.handshake);
    const agent = await this.agents.authenticate(
      (socket.handshake.auth as { token?: unknown } | undefined)?.token,
    );
    socket.data.agentId = agent.id;
    socket.data.agentName = agent.name;
  }

  onApplicationBootstrap(): void {
    this.unsubscribe.push(
      this.bus.on('run.cancel_requested', ({ runId, agentId, reason }) => {
        if (agentId) this.sockets.cancel(agentId, { runId, reason });
      }),
      this.bus.on('run.deadline_changed', ({ runId, agentId, deadlineAt }) => {
        if (agentId) this.sockets.deadline(agentId, { runId, deadlineAt });
      }),
    );
  }

  onModuleDestroy(): void {
    for (const u of this.unsubscribe) u();
  }

  /** Organizer drained or resumed an agent: tell it (any replica) and dispatch if it resumed. */
  drain(agentId: string, draining: boolean): void {
    this.sockets.drain(agentId, draining);
    const local = this.connections.get(agentId);
    if (local) local.draining = draining;
    if (!draining) this.dispatcher.kick({ everywhere: true });
  }

  /** Revoked: disconnected at once on every replica; what it ran can never report again, so it fails now. */
  async revoke(agentId: string, runIds: string[]): Promise<void> {
    this.sockets.revoke(agentId, {
      code: 'agent_revoked',
      reason:
        'An organizer revoked this agent token; its runs were failed. Ask an organizer for a new token (dryft agent config).',
    });
    for (const runId of runIds) {
      await this.lifecycle.failInfra(
        runId,
        agentId,
        "The GPU agent running this was revoked by an organizer. This is not your engine's fault; retry once.",
      );
    }
  }

  /** Through the handshake: the agent's newest connection wins; unknown events are answered. */
  handleConnection(socket: AgentSocket): void {
    const { agentId, agentName: name } = socket.data;
    this.sockets.takeOver(socket, agentId);
    this.logger.log(`agent ${name} connected (${socket.id})`);
    answerUnknownEvents(socket, AgentToServer, (event) =>
      this.logger.warn(`agent ${name} sent unknown event "${event}"; ignored`),
    );
    // Here rather than handleDisconnect, which is not told the reason.
    socket.on('disconnect', (reason) => {
      this.logger.log(`agent ${name} disconnected (${reason})`);
      if (this.connections.remove(agentId, socket.id))
        void this.agents.markDisconnected(agentId).catch(() => undefined);
    });
  }

  @SubscribeMessage('agent.ready')
  agentReady(
    @ConnectedSocket() socket: AgentSocket,
    @body('agent.ready') p: Payload<'agent.ready'>,
  ): Promise<AgentReadyAck> {
    this.connections.heardOf(
      socket.data.agentId,
      p.activeRuns.map((r) => r.runId),
    );
    return this.ready(socket, p);
  }

  @SubscribeMessage('agent.heartbeat')
  agentHeartbeat(
    @ConnectedSocket() socket: AgentSocket,
    @body('agent.heartbeat') p: Payload<'agent.heartbeat'>,
  ): Promise<AgentHeartbeatAck> {
    this.connections.heardOf(socket.data.agentId, p.activeRuns);
    return this.heartbeat(socket.data.agentId, p);
  }

  @SubscribeMessage('run.started')
  async runStarted(
    @ConnectedSocket() socket: AgentSocket,
    @body('run.started') p: Payload<'run.started'>,
  ): Promise<Ack> {
    await this.lifecycle.markStarted(p.runId, socket.data.agentId);
    return { ok: true };
  }

  @SubscribeMessage('run.batch')
  runBatch(
    @ConnectedSocket() socket: AgentSocket,
    @body('run.batch') p: Payload<'run.batch'>,
  ): Promise<BatchAck> {
    const agentId = socket.data.agentId;
    const key = LATENCY_TRACE && p.entries[0]?.type === 'log' ? `batch:${p.runId}:${p.entries[0].n}` : '';
    if (key) {
      const at = receivedAt(p);
      traceMark(key, 'created', (p.entries[0] as { ts: number }).ts);
      traceMark(key, 'received', at.received);
      traceMark(key, 'parsed', at.parsed);
    }
    this.connections.heardOf(agentId, [p.runId]);
    const acked = this.serial(p.runId, () =>
      this.lifecycle.storeBatch(p.runId, agentId, p),
    ) as Promise<BatchAck>;
    if (key)
      void acked.then(() => {
        traceMark(key, 'acked');
        setImmediate(() => traceEnd(key, 'end', { lines: p.entries.length }));
      });
    return acked;
  }

  @SubscribeMessage('run.finished')
  runFinished(
    @ConnectedSocket() socket: AgentSocket,
    @body('run.finished') p: Payload<'run.finished'>,
  ): Promise<Ack> {
    if (LATENCY_TRACE) {
      const at = receivedAt(p);
      traceMark(`fin:${p.runId}`, 'received', at.received);
      traceMark(`fin:${p.runId}`, 'parsed', at.parsed);
    }
    const agentId = socket.data.agentId;
    this.connections.heardOf(agentId, [p.runId]);
    return this.serial(p.runId, () => this.lifecycle.finish(p.runId, agentId, p)) as Promise<Ack>;
  }

  @SubscribeMessage('run.handback')
  async runHandback(
    @ConnectedSocket() socket: AgentSocket,
    @body('run.handback') p: Payload<'run.handback'>,
  ): Promise<Ack> {
    const { agentId, agentName: name } = socket.data;
    const requeued = await this.lifecycle.handBack(p.runId, agentId);
    if (requeued) {
      this.logger.log(`agent ${name} handed back run ${p.runId}: ${p.reason}`, forRun(p.runId, { agentId }));
      this.dispatcher.kick({ everywhere: true });
      return { ok: true };
    }
    return agentRefusal('run_started', 'The run has started (or is no longer yours); finish it instead.');
  }

  private serial<T>(runId: string, work: () => Promise<T>): Promise<T> {
    const previous = this.chains.get(runId) ?? Promise.resolve();
    const next = previous.then(work, work);
    const settled = next.catch(() => undefined);
    this.chains.set(runId, settled);
    void settled.then(() => {
      if (this.chains.get(runId) === settled) this.chains.delete(runId);
    });
    return next;
  }

  private async ready(socket: AgentSocket, p: Payload<'agent.ready'>): Promise<AgentReadyAck> {
    const agentId = socket.data.agentId;
    const agent = await this.agents.find(agentId);
    if (!agent || agent.revokedAt) {
      socket.disconnect(true);
      return { ...agentRefusal('agent_revoked', 'This agent was revoked.'), runs: [] };
    }
    const slots = p.slots.map((s) => ({ index: s.index, gpus: s.gpus }));
    // Reconcile what the agent still holds against what the server thinks it holds.
    const runs = await this.lifecycle.reconcile(
      agentId,
      p.activeRuns.map((r) => r.runId),
    );
    await this.agents.markReady(agentId, p.capabilities, slots);
    this.connections.set({
      agentId,
      name: agent.name,
      socket,
      capabilities: p.capabilities,
      slots,
      draining: agent.draining,
      coolDownUntil: 0,
    });
    // Dispatch after the ack has left, so the agent knows its state before the first assignment.
    setImmediate(() => this.dispatcher.kick({ everywhere: false }));
    return {
      ok: true,
      agentId,
      name: agent.name,
      heartbeatSeconds: this.heartbeatSeconds,
      leaseSeconds: this.config.AGENT_LEASE_SECONDS,
      draining: agent.draining,
      runs,
    };
  }

  private async heartbeat(agentId: string, p: Payload<'agent.heartbeat'>): Promise<AgentHeartbeatAck> {
    await this.agents.markHeartbeat(agentId);
    return { ok: true, stop: await this.lifecycle.heartbeat(agentId, p.activeRuns) };
  }
}
