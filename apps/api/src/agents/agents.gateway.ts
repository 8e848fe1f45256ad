import { Inject, Injectable, Logger, OnApplicationBootstrap, OnModuleDestroy } from '@nestjs/common';
import { agentRefusal, AgentToServer, finalRefusal, parseRunBatch } from '@dryft/libs';
import type { Ack, AgentHeartbeatAck, AgentReadyAck, BatchAck } from '@dryft/libs';
import type { Namespace, Socket } from 'socket.io';
import type { z } from 'zod';
import { AppError } from '../common/errors';
import { isDatabaseUnavailable } from '../common/database-errors';
import { EventBus } from '../common/event-bus';
import { LATENCY_TRACE, lastEvent, traceEnd, traceMark } from '../common/latency-trace';
import { CONFIG, Config } from '../config/config';
import { SocketServer } from '../socket/socket-server';
import {
  answerUnknownEvents,
  authenticatedHandshake,
  describeIssues,
  onAcked,
} from '../socket/socket-handlers';
import { RunLifecycleService } from '../runs/run-lifecycle.service';
import { AgentConnections } from './agent-connections';
import { AgentsService } from './agents.service';
import { Dispatcher } from './dispatcher.service';

type AgentEvent = keyof typeof AgentToServer;
type Payload<E extends AgentEvent> = z.infer<(typeof AgentToServer)[E]>;
export const agentRoom = (agentId: string) => `agent:${agentId}`;

/**
 * The `/agents` namespace. Every connection authenticates with its agent token in the handshake
 * (also on every reconnect); every event is parsed with its zod schema before anything is done, and
 * a malformed or unknown event is answered with an error and logged, never thrown.
 */
@Injectable()
export class AgentsGateway implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger('AgentsGateway');
  /** One chain per run: a run's batches and verdict are applied in the order they arrived. */
  private readonly chains = new Map<string, Promise<unknown>>();
  private readonly unsubscribe: (() => void)[] = [];
  private nsp!: Namespace;

  constructor(
    private readonly sockets: SocketServer,
    private readonly agents: AgentsService,
    private readonly connections: AgentConnections,
    private readonly lifecycle: RunLifecycleService,
    private readonly dispatcher: Dispatcher,
    private readonly bus: EventBus,
    @Inject(CONFIG) private readonly config: Config,
  ) {}

  get heartbeatSeconds(): number {
    return Math.max(0.2, this.config.AGENT_LEASE_SECONDS / 3);
  }

  onApplicationBootstrap(): void {
    this.nsp = this.sockets.io.of('/agents');
    this.nsp.use(
      authenticatedHandshake(this.logger, 'agent', async (socket) => {
        const agent = await this.agents.authenticate(
          (socket.handshake.auth as { token?: unknown } | undefined)?.token,
        );
        socket.data.agentId = agent.id;
        socket.data.agentName = agent.name;
      }),
    );
    this.nsp.on('connection', (socket) => this.onConnection(socket));
    this.unsubscribe.push(
      this.bus.on('run.cancel_requested', ({ runId, agentId, reason }) => {
        if (agentId) this.nsp.to(agentRoom(agentId)).emit('run.cancel', { runId, reason });
      }),
      this.bus.on('run.deadline_changed', ({ runId, agentId, deadlineAt }) => {
        if (agentId) this.nsp.to(agentRoom(agentId)).emit('run.deadline', { runId, deadlineAt });
      }),
    );
  }

  onModuleDestroy(): void {
    for (const u of this.unsubscribe) u();
  }

  /** Organizer drained or resumed an agent: tell it (any replica) and dispatch if it resumed. */
  drain(agentId: string, draining: boolean): void {
    this.nsp.to(agentRoom(agentId)).emit('agent.drain', { draining });
    const local = this.connections.get(agentId);
    if (local) local.draining = draining;
    if (!draining) this.dispatcher.kick({ everywhere: true });
  }

  /** Revoked: disconnected at once on every replica; what it ran can never report again, so it fails now. */
  async revoke(agentId: string, runIds: string[]): Promise<void> {
    // The reason first, then the disconnect: both travel in order (through Redis too).
    this.nsp.to(agentRoom(agentId)).emit('agent.revoked', {
      code: 'agent_revoked',
      reason:
        'An organizer revoked this agent token; its runs were failed. Ask an organizer for a new token (dryft agent config).',
    });
    this.nsp.in(agentRoom(agentId)).disconnectSockets(true);
    for (const runId of runIds) {
      await this.lifecycle.failInfra(
        runId,
        agentId,
        "The GPU agent running this was revoked by an organizer. This is not your engine's fault; retry once.",
      );
    }
  }

  private onConnection(socket: Socket): void {
    const agentId = socket.data.agentId as string;
    const name = socket.data.agentName as string;
    void socket.join(agentRoom(agentId));
    // One live connection per agent: a newer one (a reconnect that beat the old socket's timeout) wins.
    this.nsp.in(agentRoom(agentId)).except(socket.id).disconnectSockets(true);
    this.logger.log(`agent ${name} connected (${socket.id})`);

    this.on(socket, 'agent.ready', (p) => {
      this.connections.heardOf(
        agentId,
        p.activeRuns.map((r) => r.runId),
      );
      return this.ready(socket, p);
    });
    this.on(socket, 'agent.heartbeat', (p) => {
      this.connections.heardOf(agentId, p.activeRuns);
      return this.heartbeat(agentId, p);
    });
    this.on(socket, 'run.started', async (p): Promise<Ack> => {
      await this.lifecycle.markStarted(p.runId, agentId);
      return { ok: true };
    });
    this.on(socket, 'run.batch', (p) => {
      const key = LATENCY_TRACE && p.entries[0]?.type === 'log' ? `batch:${p.runId}:${p.entries[0].n}` : '';
      if (key) {
        traceMark(key, 'created', (p.entries[0] as { ts: number }).ts);
        traceMark(key, 'received', lastEvent.received);
        traceMark(key, 'parsed', lastEvent.parsed);
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
    });
    this.on(socket, 'run.finished', (p) => {
      if (LATENCY_TRACE) {
        traceMark(`fin:${p.runId}`, 'received', lastEvent.received);
        traceMark(`fin:${p.runId}`, 'parsed', lastEvent.parsed);
      }
      this.connections.heardOf(agentId, [p.runId]);
      return this.serial(p.runId, () => this.lifecycle.finish(p.runId, agentId, p)) as Promise<Ack>;
    });
    this.on(socket, 'run.handback', async (p): Promise<Ack> => {
      const requeued = await this.lifecycle.handBack(p.runId, agentId);
      if (requeued) {
        this.logger.log(`agent ${name} handed back run ${p.runId}: ${p.reason}`);
        this.dispatcher.kick({ everywhere: true });
        return { ok: true };
      }
      return agentRefusal('run_started', 'The run has started (or is no longer yours); finish it instead.');
    });
    answerUnknownEvents(socket, AgentToServer, (event) =>
      this.logger.warn(`agent ${name} sent unknown event "${event}"; ignored`),
    );
    socket.on('disconnect', (reason) => {
      this.logger.log(`agent ${name} disconnected (${reason})`);
      if (this.connections.remove(agentId, socket.id))
        void this.agents.markDisconnected(agentId).catch(() => undefined);
    });
  }

  /** Parses the payload with the protocol's schema, runs the handler, and always answers the ack. */
  private on<E extends AgentEvent>(
    socket: Socket,
    event: E,
    handler: (payload: Payload<E>) => Promise<unknown>,
  ): void {
    const name = socket.data.agentName as string;
    // run.batch carries thousands of lines: its parser decides exactly as the schema, quicker.
    const schema = event === 'run.batch' ? { safeParse: parseRunBatch } : AgentToServer[event];
    onAcked(socket, event, schema as unknown as z.ZodType<Payload<E>>, {
      handle: handler,
      malformed: (message, error) => {
        const first = describeIssues(error, 5);
        this.logger.warn(`agent ${name}: malformed ${event}: ${first}`);
        // Resending the same message cannot help: a final refusal, so the agent stops retrying.
        return finalRefusal(
          'invalid_payload',
          `malformed ${event}, refused for good (do not resend): ${first}`,
        );
      },
      failed: (err) => {
        if (isDatabaseUnavailable(err))
          return agentRefusal(
            'database_unavailable',
            "The hub's database is unavailable right now; resend later.",
          );
        if (err instanceof AppError && err.status < 500) {
          this.logger.warn(`agent ${name}: ${event} refused: ${err.message}`);
          return finalRefusal(err.code, err.message);
        }
        this.logger.error(`agent ${name}: ${event} failed: ${(err as Error).stack ?? err}`);
        return agentRefusal('internal_error', 'The server could not process this; resend later.');
      },
    });
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

  private async ready(socket: Socket, p: Payload<'agent.ready'>): Promise<AgentReadyAck> {
    const agentId = socket.data.agentId as string;
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
