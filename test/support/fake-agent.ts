import { readFileSync } from 'node:fs';
import { io, Socket } from 'socket.io-client';
import { RunAssign } from '@dryft/libs';
import type { AgentCapabilities, HarnessEvent, HarnessResultEvent } from '@dryft/libs';

/** A steady run: `lines` log lines, one batch each, `intervalMs` apart, then a verdict. */
export interface Script {
  lines: number;
  intervalMs: number;
}

/**
 * The one fake GPU agent of the tests: it speaks the real `/agents` protocol over socket.io (the
 * zod shapes of libs/src/protocol/agents.ts) with the capabilities a test gives it (CPU by
 * default). It records what dispatch assigns (the spec, with the cached baseline the hub looked up)
 * and accepts each assignment unless `accept` is false; a test then reports harness events and
 * verdicts as the real agent does (`events`, `finish`), or lets it play a `Script` on its own
 * (`FakeAgent.streaming`: reconnects, heartbeats, a steady stream of lines). The real agent process
 * is exercised by the end-to-end tests.
 */
export class FakeAgent {
  readonly socket: Socket;
  readonly assigned: RunAssign[] = [];
  /** Refuse the next assignments (with reason "busy") while false. */
  accept = true;
  /** The verdict `play` sends (the harness's result event). */
  result: Omit<HarnessResultEvent, 'type' | 'workloads' | 'metrics'> = {
    status: 'succeeded',
    failureCode: null,
    message: 'scripted',
    score: null,
  };
  private readonly seq = new Map<string, number>();
  private script?: Script;

  constructor(
    url: string,
    readonly token: string,
    opts: { reconnection?: boolean } = {},
  ) {
    this.socket = io(`${url}/agents`, {
      auth: { token },
      transports: ['websocket'],
      forceNew: true,
      reconnection: opts.reconnection ?? false,
    });
    this.socket.on('run.assign', (raw: unknown, ack: (r: unknown) => void) => {
      const assign = RunAssign.parse(raw);
      this.assigned.push(assign);
      ack({ accepted: this.accept, reason: this.accept ? undefined : 'busy' });
      // Stopped mid-run by a test's teardown: nothing to report.
      if (this.accept && this.script) this.play(assign.runId, this.script).catch(() => undefined);
    });
  }

  /**
   * An agent that plays `script` on every run it is given, with the token the hub wrote for the
   * local agent: it reconnects and says ready after every connect, and heartbeats every 2 s.
   */
  static async streaming(url: string, tokenFile: string, script: Script): Promise<FakeAgent> {
    const agent = new FakeAgent(url, readFileSync(tokenFile, 'utf8').trim(), { reconnection: true });
    agent.script = script;
    agent.socket.on('connect', () => void agent.ready().catch(() => undefined));
    await agent.connected();
    const beat = setInterval(
      () => agent.socket.emit('agent.heartbeat', { activeRuns: [] }, () => undefined),
      2000,
    );
    agent.socket.once('disconnect', () => clearInterval(beat));
    return agent;
  }

  private connected(): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      if (this.socket.connected) resolve();
      this.socket.once('connect', () => resolve());
      this.socket.once('connect_error', reject);
    });
  }

  async ready(opts: { slots?: number; capabilities?: Partial<AgentCapabilities> } = {}) {
    await this.connected();
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

  /** Says the run started and sends harness events as its next batch. */
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

  /** The verdict, after the batches sent so far (or after `lastSeq` when a test sent its own). */
  finish(runId: string, result: Omit<HarnessResultEvent, 'type'>, lastSeq = this.seq.get(runId) ?? 0) {
    return this.socket.emitWithAck('run.finished', {
      runId,
      lastSeq,
      canceled: false,
      exitCode: 0,
      result: { type: 'result', ...result },
    });
  }

  private async play(runId: string, script: Script): Promise<void> {
    const s = this.socket;
    await s.timeout(5000).emitWithAck('run.started', { runId });
    let seq = 0;
    for (let n = 1; n <= script.lines; n++) {
      seq += 1;
      await s.timeout(5000).emitWithAck('run.batch', {
        runId,
        seq,
        entries: [{ type: 'log', n, ts: Date.now(), stream: 'out', text: `scripted line ${n}` }],
      });
      await new Promise((r) => setTimeout(r, script.intervalMs));
    }
    await s.timeout(5000).emitWithAck('run.finished', {
      runId,
      lastSeq: seq,
      canceled: false,
      exitCode: 0,
      result: { type: 'result', ...this.result, workloads: [], metrics: {} },
    });
  }

  close(): void {
    this.socket.close();
  }
}
