import { createServer, Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { collectDefaultMetrics, Counter, Gauge, Registry } from 'prom-client';

/** What the agent says of itself at scrape time. */
export interface AgentState {
  slots: number;
  busySlots: number;
  connected: boolean;
  draining: boolean;
}

/**
 * The agent's own Prometheus metrics (agent.json `metrics: {port, host}`): its slots, the runs it
 * finished, reconnects, and the bytes it downloaded (submissions) and uploaded (log batches and
 * verdicts, as JSON). Served on a listener of its own that answers only `GET /metrics`.
 */
export class AgentMetrics {
  readonly registry = new Registry();
  private server?: Server;

  readonly runsFinished = new Counter({
    name: 'dryft_gpu_agent_runs_finished_total',
    help: 'Runs this agent reported a verdict for, by status (canceled: stopped before its own verdict)',
    labelNames: ['status'] as const,
    registers: [this.registry],
  });
  readonly runsAccepted = new Counter({
    name: 'dryft_gpu_agent_runs_accepted_total',
    help: 'Assignments this agent accepted',
    registers: [this.registry],
  });
  readonly reconnects = new Counter({
    name: 'dryft_gpu_agent_reconnects_total',
    help: 'Times this agent said agent.ready again after its first connection',
    registers: [this.registry],
  });
  readonly downloadBytes = new Counter({
    name: 'dryft_gpu_agent_download_bytes_total',
    help: 'Submission bytes this agent downloaded from the hub',
    registers: [this.registry],
  });
  readonly uploadBytes = new Counter({
    name: 'dryft_gpu_agent_upload_bytes_total',
    help: 'Bytes of log batches and verdicts this agent sent to the hub (JSON, resends included)',
    registers: [this.registry],
  });

  constructor(state: () => AgentState) {
    collectDefaultMetrics({ register: this.registry });
    new Gauge({
      name: 'dryft_gpu_agent_slots',
      help: 'Slots of this agent: all of them, and those running a run',
      labelNames: ['state'] as const,
      registers: [this.registry],
      collect() {
        const s = state();
        this.set({ state: 'total' }, s.slots);
        this.set({ state: 'busy' }, s.busySlots);
      },
    });
    new Gauge({
      name: 'dryft_gpu_agent_connected',
      help: '1 while this agent is connected to the hub and ready',
      registers: [this.registry],
      collect() {
        this.set(state().connected ? 1 : 0);
      },
    });
    new Gauge({
      name: 'dryft_gpu_agent_draining',
      help: '1 while this agent takes no new runs (drained by an organizer, or shutting down)',
      registers: [this.registry],
      collect() {
        this.set(state().draining ? 1 : 0);
      },
    });
  }

  /** The port it listens on (port 0 picks one), or null before `serve`. */
  get port(): number | null {
    const address = this.server?.address();
    return address && typeof address === 'object' ? (address as AddressInfo).port : null;
  }

  serve(port: number, host: string): Promise<void> {
    const server = createServer((req, res) => {
      if ((req.url ?? '').split('?')[0] !== '/metrics' || (req.method !== 'GET' && req.method !== 'HEAD')) {
        res.writeHead(404, { 'Content-Type': 'text/plain' }).end('This port serves only GET /metrics.\n');
        return;
      }
      this.registry.metrics().then(
        (text) => res.writeHead(200, { 'Content-Type': this.registry.contentType }).end(text),
        (err: unknown) => res.writeHead(503).end(`Metrics unavailable: ${(err as Error).message}\n`),
      );
    });
    // Never keeps the process alive on its own: the agent exits when its work is done.
    server.unref();
    this.server = server;
    return new Promise((resolve, reject) => {
      server.once('error', (err: NodeJS.ErrnoException) =>
        reject(
          new Error(
            `metrics.port ${port} on ${host}: ${err.code ?? err.message}; pick a free port or leave "metrics" out of the agent config`,
          ),
        ),
      );
      server.listen(port, host, () => resolve());
    });
  }

  close(): void {
    this.server?.closeAllConnections?.();
    this.server?.close();
  }
}
