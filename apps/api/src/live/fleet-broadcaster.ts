import type { AgentView } from '@dryft/libs';
import type { LiveNamespace } from '../socket/socket-server';

/** Fleet changes come in bursts (an agent connects, readies, takes runs): one update per window. */
export const AGENTS_COALESCE_MS = 250;

export interface FleetBroadcasterDeps {
  agents: { list(): Promise<AgentView[]> };
  nsp: () => LiveNamespace;
  logError: (message: string) => void;
}

/**
 * The organizers' fleet view on `/live` (room `agents`): a change to the fleet (AgentEvents) is sent
 * as the whole list, `agents.update`, at most once per {@link AGENTS_COALESCE_MS}.
 */
export class FleetBroadcaster {
  private timer?: NodeJS.Timeout;

  constructor(private readonly deps: FleetBroadcasterDeps) {}

  changed(): void {
    if (this.timer) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.deps.agents
        .list()
        .then((agents) => this.deps.nsp().to('agents').emit('agents.update', { agents }))
        .catch((err: unknown) => this.deps.logError(`agents update: ${(err as Error).message}`));
    }, AGENTS_COALESCE_MS);
  }

  stop(): void {
    if (this.timer) clearTimeout(this.timer);
  }
}
