import { Injectable } from '@nestjs/common';
import type { AgentRevoked, RunAssign, RunAssignAck, RunCancel, RunDeadline } from '@dryft/libs';
import { AgentSocket, AgentsNamespace, SocketServer } from '../socket/socket-server';
import { DISPATCH_SIGNAL } from '../socket/replica-messages';

export const agentRoom = (agentId: string) => `agent:${agentId}`;

/**
 * The one writer of the `/agents` namespace: every message the hub sends an agent (or another
 * replica about agents) leaves from here, typed by the contract (ServerToAgentEvents). The gateway
 * answers what agents send; the dispatcher assigns runs; both speak through this class.
 */
@Injectable()
export class AgentSockets {
  constructor(private readonly sockets: SocketServer) {}

  /** The namespace this class writes to (the gateway gets its own from Nest, in afterInit). */
  get nsp(): AgentsNamespace {
    return this.sockets.agents;
  }

  /** Whether other replicas can exist (a nudge needs the Redis adapter). */
  get clustered(): boolean {
    return this.sockets.clustered;
  }

  /** One live connection per agent: a newer one (a reconnect that beat the old socket's timeout) wins. */
  takeOver(socket: AgentSocket, agentId: string): void {
    void socket.join(agentRoom(agentId));
    this.nsp.in(agentRoom(agentId)).except(socket.id).disconnectSockets(true);
  }

  cancel(agentId: string, cancel: RunCancel): void {
    this.nsp.to(agentRoom(agentId)).emit('run.cancel', cancel);
  }

  deadline(agentId: string, deadline: RunDeadline): void {
    this.nsp.to(agentRoom(agentId)).emit('run.deadline', deadline);
  }

  drain(agentId: string, draining: boolean): void {
    this.nsp.to(agentRoom(agentId)).emit('agent.drain', { draining });
  }

  /** The reason first, then the disconnect, on every replica: both travel in order (through Redis too). */
  revoke(agentId: string, revoked: AgentRevoked): void {
    this.nsp.to(agentRoom(agentId)).emit('agent.revoked', revoked);
    this.nsp.in(agentRoom(agentId)).disconnectSockets(true);
  }

  /** Offers a run on the agent's own socket; rejects when the agent does not answer within `timeoutMs`. */
  assign(socket: AgentSocket, assignment: RunAssign, timeoutMs: number): Promise<RunAssignAck> {
    return socket.timeout(timeoutMs).emitWithAck('run.assign', assignment);
  }

  /** Tells the other replicas to try their agents; throws when the adapter cannot send. */
  nudgeReplicas(): void {
    this.nsp.serverSideEmit(DISPATCH_SIGNAL);
  }

  onReplicaNudge(handler: () => void): void {
    this.nsp.on(DISPATCH_SIGNAL, handler);
  }
}
