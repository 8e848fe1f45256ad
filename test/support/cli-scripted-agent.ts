import { readFileSync } from 'node:fs';
import { io, type Socket } from 'socket.io-client';
import { RunAssign } from '@dryft/libs';

/**
 * An agent that speaks the real `/agents` protocol to the real API but, instead of the harness,
 * writes `lines` log lines at a steady pace and then succeeds: a run long enough, and predictable
 * enough, to cut the network in the middle of `dryft logs --follow`. The toy-decode runs of the
 * real local agent are exercised by the other end-to-end tests.
 */
export class ScriptedAgent {
  private socket?: Socket;
  readonly assigned: string[] = [];
  /** The verdict of the next runs (the harness's result event). */
  result: {
    status: 'succeeded' | 'failed';
    failureCode: 'incorrect_output' | null;
    message: string;
    score: number | null;
  } = {
    status: 'succeeded',
    failureCode: null,
    message: 'scripted',
    score: null,
  };

  constructor(
    private readonly url: string,
    private readonly tokenFile: string,
    private readonly script: { lines: number; intervalMs: number } = { lines: 60, intervalMs: 50 },
  ) {}

  async start(): Promise<void> {
    const token = readFileSync(this.tokenFile, 'utf8').trim();
    const socket = io(`${this.url}/agents`, {
      auth: { token },
      transports: ['websocket'],
      reconnection: true,
    });
    this.socket = socket;
    socket.on('run.assign', (raw: unknown, ack: (a: unknown) => void) => {
      const assign = RunAssign.parse(raw);
      this.assigned.push(assign.runId);
      ack({ accepted: true });
      this.play(assign.runId).catch(() => undefined); // stopped mid-run by the test's teardown
    });
    socket.on('connect', () => {
      socket.emit(
        'agent.ready',
        {
          capabilities: {
            accelerator: 'cpu',
            gpuModel: null,
            gpuCount: 0,
            driver: null,
            harnessVersion: 'scripted',
            agentVersion: 'scripted',
            benchmarks: [],
          },
          slots: [{ index: 0, gpus: [] }],
          activeRuns: [],
        },
        () => undefined,
      );
    });
    await new Promise<void>((resolve, reject) => {
      socket.once('connect', () => resolve());
      socket.once('connect_error', reject);
    });
    const beat = setInterval(() => socket.emit('agent.heartbeat', { activeRuns: [] }, () => undefined), 2000);
    socket.once('disconnect', () => clearInterval(beat));
  }

  private async play(runId: string): Promise<void> {
    const s = this.socket!;
    await s.timeout(5000).emitWithAck('run.started', { runId });
    let seq = 0;
    for (let n = 1; n <= this.script.lines; n++) {
      seq += 1;
      await s.timeout(5000).emitWithAck('run.batch', {
        runId,
        seq,
        entries: [{ type: 'log', n, ts: Date.now(), stream: 'out', text: `scripted line ${n}` }],
      });
      await new Promise((r) => setTimeout(r, this.script.intervalMs));
    }
    await s.timeout(5000).emitWithAck('run.finished', {
      runId,
      lastSeq: seq,
      canceled: false,
      exitCode: 0,
      result: { type: 'result', ...this.result, workloads: [], metrics: {} },
    });
  }

  stop(): void {
    this.socket?.disconnect();
  }
}
