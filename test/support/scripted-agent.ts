import { io, Socket } from 'socket.io-client';
import type { AgentCapabilities, HarnessEvent, HarnessResultEvent, RunAssign } from '@dryft/libs';

/**
 * A scripted agent speaking the real `/agents` protocol over socket.io, with the capabilities a
 * test gives it (CPU by default): it accepts every assignment and keeps it until told otherwise,
 * records what dispatch assigns (the spec, with the cached baseline the hub looked up for its
 * capabilities), and reports harness events and verdicts the way the real agent does.
 */
export class ScriptedAgent {
  readonly socket: Socket;
  readonly assigned: RunAssign[] = [];
  private seq = new Map<string, number>();

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

  /** Sends harness events as one batch. */
  async events(runId: string, events: HarnessEvent[]) {
    const seq = (this.seq.get(runId) ?? 0) + 1;
    this.seq.set(runId, seq);
    await this.socket.emitWithAck('run.started', { runId });
    return this.socket.emitWithAck('run.batch', {
      runId,
      seq,
      entries: events.map((event) => ({ type: 'event', ts: Date.now(), event })),
    });
  }

  finish(runId: string, result: Omit<HarnessResultEvent, 'type'>) {
    return this.socket.emitWithAck('run.finished', {
      runId,
      lastSeq: this.seq.get(runId) ?? 0,
      canceled: false,
      exitCode: 0,
      result: { type: 'result', ...result },
    });
  }

  close(): void {
    this.socket.close();
  }
}
