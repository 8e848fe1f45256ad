import { Injectable } from '@nestjs/common';
import type { AgentCapabilities } from '@dryft/libs';
import type { AgentSocket } from '../socket/socket-server';

export interface LocalAgent {
  agentId: string;
  name: string;
  socket: AgentSocket;
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
  /**
   * When this process last received a message in which an agent said it holds a run (heartbeat,
   * batch, verdict), on the monotonic clock and at receipt, before any database work: the sweeper
   * judges leases on what agents sent, even while their messages still wait to be processed.
   */
  private readonly heard = new Map<string, { agentId: string; at: number }>();

  heardOf(agentId: string, runIds: string[]): void {
    const at = performance.now();
    for (const runId of runIds) this.heard.set(runId, { agentId, at });
    if (this.heard.size > 10_000)
      for (const [runId, h] of this.heard) if (at - h.at > 60_000) this.heard.delete(runId);
  }

  /** How many ms ago `agentId` last said it holds `runId` (on this process), or null if it never did. */
  heardAgo(runId: string, agentId: string): number | null {
    const h = this.heard.get(runId);
    return h && h.agentId === agentId ? performance.now() - h.at : null;
  }

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
