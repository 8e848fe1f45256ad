import { Injectable } from '@nestjs/common';
import type { AgentCapabilities } from '@dryft/libs';
import type { Socket } from 'socket.io';

export interface LocalAgent {
  agentId: string;
  name: string;
  socket: Socket;
  capabilities: AgentCapabilities;
  slots: { index: number; gpus: string[] }[];
  draining: boolean;
  /** Dispatch skips the agent until then (it refused or missed an assignment). */
  coolDownUntil: number;
}

/**
 * The agents whose socket is connected to this process and has said `agent.ready`. Each replica
 * dispatches only to its own agents, so an assignment always travels on a socket this process holds.
 */
@Injectable()
export class AgentConnections {
  private readonly byAgent = new Map<string, LocalAgent>();

  set(agent: LocalAgent): void {
    this.byAgent.set(agent.agentId, agent);
  }

  get(agentId: string): LocalAgent | undefined {
    return this.byAgent.get(agentId);
  }

  /** Removes the entry only if it still belongs to this socket (a newer connection may have replaced it). */
  remove(agentId: string, socketId: string): boolean {
    const current = this.byAgent.get(agentId);
    if (current && current.socket.id === socketId) {
      this.byAgent.delete(agentId);
      return true;
    }
    return false;
  }

  all(): LocalAgent[] {
    return [...this.byAgent.values()];
  }
}
