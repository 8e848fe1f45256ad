import { io, Socket } from 'socket.io-client';
import type { AgentCapabilities, RunAssign } from '@dryft/libs';

/**
 * A scripted agent speaking the real `/agents` protocol over socket.io, with the capabilities a
 * test gives it (CPU by default): it accepts every assignment and keeps it until told otherwise.
 */
export class ScriptedAgent {
  readonly socket: Socket;
  readonly assigned: RunAssign[] = [];

  constructor(
    url: string,
    readonly token: string,
  ) {
    this.socket = io(`${url}/agents`, {
      auth: { token },
      transports: ['websocket'],
      forceNew: true,
      reconnection: false,
    });
    this.socket.on('run.assign', (a: RunAssign, ack: (r: unknown) => void) => {
      this.assigned.push(a);
      ack({ accepted: true });
    });
  }

  async ready(opts: { slots?: number; capabilities?: Partial<AgentCapabilities> } = {}) {
    await new Promise<void>((resolve, reject) => {
      if (this.socket.connected) resolve();
      this.socket.once('connect', () => resolve());
      this.socket.once('connect_error', reject);
    });
    return this.socket.emitWithAck('agent.ready', {
      capabilities: {
        accelerator: 'cpu',
        gpuModel: null,
        gpuCount: 0,
        driver: null,
        harnessVersion: 'test',
        agentVersion: 'test',
        benchmarks: [],
        ...opts.capabilities,
      },
      slots: Array.from({ length: opts.slots ?? 1 }, (_, index) => ({ index, gpus: [] })),
      activeRuns: [],
    });
  }

  close(): void {
    this.socket.close();
  }
}
