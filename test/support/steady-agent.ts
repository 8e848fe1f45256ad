import { io, type Socket } from 'socket.io-client';
import { AgentReadyAck, BatchAck, RunAssign } from '@dryft/libs';

/**
 * An agent on the real /agents protocol that writes a steady stream of log lines (`text(n)`,
 * `perBatch` lines per batch every `intervalMs`) and then succeeds, and that survives hub restarts
 * the way the real agent does: it reconnects (also after "io server disconnect"), reports the run it
 * holds with the last acknowledged batch, and resends the rest. For fault tests that need a long,
 * predictable run without the harness.
 */
export class SteadyAgent {
  socket!: Socket;
  /** Lines the hub has acknowledged for the current run. */
  acked = 0;
  private runId: string | null = null;
  private stopped = false;
  private beat?: NodeJS.Timeout;

  constructor(
    private readonly url: string,
    private readonly token: string,
    private readonly script: {
      lines: number;
      perBatch: number;
      intervalMs: number;
      text?: (n: number) => string;
    },
  ) {}

  start(): void {
    this.socket = io(`${this.url}/agents`, {
      auth: { token: this.token },
      transports: ['websocket'],
      reconnection: false,
    });
    const again = () => {
      if (!this.stopped)
        setTimeout(() => !this.stopped && !this.socket.connected && this.socket.connect(), 300);
    };
    this.socket.on('disconnect', again);
    this.socket.on('connect_error', again);
    this.socket.on('connect', () => void this.ready().catch(() => this.socket.disconnect()));
    this.socket.on('run.assign', (raw: unknown, ack: (a: unknown) => void) => {
      const assign = RunAssign.parse(raw);
      ack({ accepted: true });
      this.runId = assign.runId;
      this.acked = 0;
      void this.play(assign.runId);
    });
    this.beat = setInterval(() => {
      if (this.socket.connected)
        this.socket.emit('agent.heartbeat', { activeRuns: this.runId ? [this.runId] : [] }, () => undefined);
    }, 2_000);
    this.beat.unref();
  }

  private async ready(): Promise<void> {
    const raw: unknown = await this.socket.timeout(10_000).emitWithAck('agent.ready', {
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
      activeRuns: this.runId ? [{ runId: this.runId, lastAckedSeq: this.batchesAcked }] : [],
    });
    const ack = AgentReadyAck.parse(raw);
    for (const r of ack.runs)
      if (r.runId === this.runId) this.acked = Math.max(this.acked, r.ackedSeq * this.script.perBatch);
  }

  private get batchesAcked(): number {
    return Math.floor(this.acked / this.script.perBatch);
  }

  /** Sends until acknowledged, across disconnects. */
  private async send(event: string, payload: unknown): Promise<unknown> {
    for (;;) {
      if (this.stopped) throw new Error('stopped');
      if (this.socket.connected) {
        try {
          return await this.socket.timeout(5_000).emitWithAck(event, payload);
        } catch {
          /* no ack: resend */
        }
      }
      await new Promise((r) => setTimeout(r, 200));
    }
  }

  private async play(runId: string): Promise<void> {
    const { lines, perBatch, intervalMs } = this.script;
    const text = this.script.text ?? ((n: number) => `steady line ${n}`);
    const batches = Math.ceil(lines / perBatch);
    try {
      await this.send('run.started', { runId });
      for (let seq = 1; seq <= batches; seq++) {
        while (this.batchesAcked < seq) {
          const first = (seq - 1) * perBatch + 1;
          const last = Math.min(lines, seq * perBatch);
          const entries = [];
          for (let n = first; n <= last; n++)
            entries.push({ type: 'log', n, ts: Date.now(), stream: 'out', text: text(n) });
          const ack = BatchAck.safeParse(await this.send('run.batch', { runId, seq, entries }));
          if (ack.success) this.acked = Math.max(this.acked, Math.min(lines, ack.data.ackedSeq * perBatch));
          if (ack.success && ack.data.stop) return;
        }
        await new Promise((r) => setTimeout(r, intervalMs));
      }
      for (;;) {
        const ack = (await this.send('run.finished', {
          runId,
          lastSeq: batches,
          canceled: false,
          exitCode: 0,
          result: {
            type: 'result',
            status: 'succeeded',
            failureCode: null,
            message: 'scripted',
            score: null,
            workloads: [],
            metrics: {},
          },
        })) as { ok?: boolean };
        if (ack?.ok) break;
        await new Promise((r) => setTimeout(r, 300));
      }
    } catch {
      return; // stopped by the test
    }
    this.runId = null;
  }

  stop(): void {
    this.stopped = true;
    if (this.beat) clearInterval(this.beat);
    this.socket?.close();
  }
}
