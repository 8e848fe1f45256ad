import { io, Socket } from 'socket.io-client';
import { Ack, AgentReadyAck, BatchAck, RunAssign } from '@dryft/libs';
import type { AgentCapabilities, BatchEntry, HarnessEvent, HarnessResultEvent } from '@dryft/libs';

/** A steady run: `lines` log lines, one batch each, `intervalMs` apart, then a verdict. */
export interface Script {
  lines: number;
  intervalMs: number;
  /** Lines per numbered batch (default 1): a long run streams in fewer, larger batches. */
  perBatch?: number;
  /** The text of line n (default `scripted line n`). */
  text?: (n: number) => string;
  /**
   * After the batch with this line the stream waits for {@link FakeAgent.release}: a test lands a
   * cut in the middle of the run however slowly its own side started.
   */
  holdAfterLine?: number;
}

/** The lines of a flood batch ({@link FakeAgent.floodBatch}). */
export interface FloodLines {
  firstN: number;
  count: number;
  ts: number;
  stream: 'out' | 'harness' | 'agent';
  text: string;
}

/**
 * The JSON text of `{ runId, seq, entries }` with `count` log lines numbered from `firstN`, exactly
 * as JSON.stringify writes it (the same keys in the same order), by a template: a string append per
 * line instead of an object and its serialisation.
 */
export function floodJson(runId: string, seq: number, lines: FloodLines): string {
  const rest = `,"ts":${JSON.stringify(lines.ts)},"stream":${JSON.stringify(lines.stream)},"text":${JSON.stringify(lines.text)}}`;
  let json = `{"runId":${JSON.stringify(runId)},"seq":${JSON.stringify(seq)},"entries":[`;
  for (let i = 0; i < lines.count; i++) json += `${i ? ',' : ''}{"type":"log","n":${lines.firstN + i}${rest}`;
  return `${json}]}`;
}

/** A payload already encoded as JSON ({@link FakeAgent.floodBatch}). */
class PreEncoded {
  constructor(readonly json: string) {}
}

/**
 * The one fake GPU agent of the tests: it speaks the real `/agents` protocol over socket.io (the
 * zod shapes of libs/src/protocol/agents.ts) with the capabilities a test gives it (CPU by
 * default). It records what dispatch assigns (the spec, with the cached baseline the hub looked up)
 * and accepts each assignment unless `accept` is false; a test then reports harness events and
 * verdicts as the real agent does (`events`, `finish`), or lets it play a `Script` on its own
 * (`FakeAgent.streaming`). A streaming agent survives cuts and hub restarts the way the real one
 * does: it reconnects, reports the run it holds with its last acknowledged batch, and resends
 * everything until it is acknowledged. The real agent process is exercised by the e2e tests.
 *
 * The bench (bench/run.mjs, plain JavaScript run by node) uses this same class, compiled by
 * `npm run build` (test/support/tsconfig.json) to test/support/dist/fake-agent.js: one fake agent,
 * not a copy per caller. It imports nothing but socket.io-client and @dryft/libs for that reason.
 */
export class FakeAgent {
  readonly socket: Socket;
  readonly assigned: RunAssign[] = [];
  /** Refuse the next assignments (with reason "busy") while false. */
  accept = true;
  /** Called after each assignment is acknowledged, with when it arrived (the bench's dispatch latency). */
  onAssign: ((assign: RunAssign, at: number) => void) | null = null;
  /** The verdict `play` sends (the harness's result event). */
  result: Omit<HarnessResultEvent, 'type' | 'workloads' | 'metrics'> = {
    status: 'succeeded',
    failureCode: null,
    message: 'scripted',
    score: null,
  };
  private readonly seq = new Map<string, number>();
  private script?: Script;
  /** Streaming: the run being played and its last acknowledged batch. */
  private playing: string | null = null;
  private acked = 0;
  private stopped = false;
  private releaseHold: () => void = () => undefined;
  private readonly held = new Promise<void>((r) => (this.releaseHold = r));
  /** Whether this agent's encoder sends {@link PreEncoded} payloads as they are (floodBatch). */
  private preEncoding = false;

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
      const at = Date.now();
      const assign = RunAssign.parse(raw);
      this.assigned.push(assign);
      ack({ accepted: this.accept, reason: this.accept ? undefined : 'busy' });
      this.onAssign?.(assign, at);
      // Stopped mid-run by a test's teardown: nothing to report.
      if (this.accept && this.script) this.play(assign.runId, this.script).catch(() => undefined);
    });
  }

  /**
   * An agent that plays `script` on every run it is given. It reconnects by itself (also after the
   * hub's own disconnect at shutdown), says ready after every connect with the run it holds, and
   * heartbeats every 2 s.
   */
  static async streaming(url: string, token: string, script: Script): Promise<FakeAgent> {
    const agent = new FakeAgent(url, token);
    agent.script = script;
    const again = () => {
      if (!agent.stopped) setTimeout(() => !agent.socket.connected && agent.socket.connect(), 300).unref();
    };
    agent.socket.on('disconnect', again);
    agent.socket.on('connect_error', again);
    agent.socket.on('connect', () => void agent.hello().catch(() => undefined));
    await agent.connected();
    const beat = setInterval(() => {
      if (agent.socket.connected)
        agent.socket.emit(
          'agent.heartbeat',
          { activeRuns: agent.playing ? [agent.playing] : [] },
          () => undefined,
        );
    }, 2000);
    beat.unref();
    return agent;
  }

  /** agent.ready of a streaming agent: the run it plays, from its last acknowledged batch. */
  private async hello(): Promise<void> {
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
      activeRuns: this.playing ? [{ runId: this.playing, lastAckedSeq: this.acked }] : [],
    });
    const ack = AgentReadyAck.parse(raw);
    for (const r of ack.runs) if (r.runId === this.playing) this.acked = Math.max(this.acked, r.ackedSeq);
  }

  /** Sends until acknowledged, across disconnects and restarts. */
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

  /** run.started, acknowledged within `timeoutMs`. */
  started(runId: string, timeoutMs = 10_000) {
    return this.socket.timeout(timeoutMs).emitWithAck('run.started', { runId });
  }

  /** One numbered batch exactly as given (a caller that numbers its own, like the bench's load). */
  batch(runId: string, seq: number, entries: BatchEntry[], timeoutMs = 10_000) {
    return this.socket.timeout(timeoutMs).emitWithAck('run.batch', { runId, seq, entries });
  }

  /**
   * One numbered batch of `count` log lines numbered from `firstN`, all with the same `ts`, `stream`
   * and `text`: the bench's flood. The payload is the JSON `batch` would send, built by a template
   * (a string append per line) and handed to socket.io already encoded, so the load generator's
   * cost per line is not an object, its JSON and socket.io's walk for binary parts: a bench that
   * floods the hub measures the hub.
   */
  floodBatch(runId: string, seq: number, lines: FloodLines, timeoutMs = 10_000) {
    const json = floodJson(runId, seq, lines);
    this.sendsPreEncoded();
    return this.socket.timeout(timeoutMs).emitWithAck('run.batch', new PreEncoded(json));
  }

  /**
   * Teaches this agent's socket.io encoder (its own: every FakeAgent has its own manager) to write a
   * {@link PreEncoded} payload as it is: the text socket.io-parser's encodeAsString would make, an
   * event packet `2<nsp>,<ack id>["<event>",<json>]`. Any other packet is encoded as before.
   */
  private sendsPreEncoded(): void {
    if (this.preEncoding) return;
    this.preEncoding = true;
    const manager = this.socket.io as unknown as {
      encoder: { encode(packet: { type: number; nsp: string; id?: number; data?: unknown[] }): unknown[] };
    };
    const encoder = manager.encoder;
    const encode = encoder.encode.bind(encoder);
    encoder.encode = (packet) => {
      const data = packet.data;
      if (packet.type !== 2 || !Array.isArray(data) || data.length !== 2 || !(data[1] instanceof PreEncoded))
        return encode(packet);
      const nsp = packet.nsp && packet.nsp !== '/' ? `${packet.nsp},` : '';
      return [`2${nsp}${packet.id ?? ''}[${JSON.stringify(data[0])},${data[1].json}]`];
    };
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

  /**
   * The verdict, after the batches sent so far (or after `lastSeq` when a test sent its own);
   * `stopped` reports it canceled by the agent itself, as the real one does at the whole-run
   * deadline (`{ cancelReason: 'run_time_limit' }`).
   */
  finish(
    runId: string,
    result: Omit<HarnessResultEvent, 'type'>,
    lastSeq = this.seq.get(runId) ?? 0,
    stopped?: { cancelReason?: string },
  ) {
    return this.socket.emitWithAck('run.finished', {
      runId,
      lastSeq,
      canceled: stopped !== undefined,
      ...(stopped?.cancelReason ? { cancelReason: stopped.cancelReason } : {}),
      exitCode: stopped ? null : 0,
      result: { type: 'result', ...result },
    });
  }

  private async play(runId: string, script: Script): Promise<void> {
    this.playing = runId;
    this.acked = 0;
    const text = script.text ?? ((n: number) => `scripted line ${n}`);
    await this.send('run.started', { runId });
    const per = Math.max(1, script.perBatch ?? 1);
    const batches = Math.ceil(script.lines / per);
    for (let seq = 1; seq <= batches; seq++) {
      const first = (seq - 1) * per + 1;
      const last = Math.min(seq * per, script.lines);
      const entries = [];
      for (let n = first; n <= last; n++)
        entries.push({ type: 'log', n, ts: Date.now(), stream: 'out', text: text(n) });
      while (this.acked < seq) {
        const ack = BatchAck.safeParse(await this.send('run.batch', { runId, seq, entries }));
        if (ack.success) this.acked = Math.max(this.acked, ack.data.ackedSeq);
      }
      if (script.holdAfterLine !== undefined && first <= script.holdAfterLine && script.holdAfterLine <= last)
        await this.held;
      await new Promise((r) => setTimeout(r, script.intervalMs));
    }
    for (;;) {
      const ack = Ack.safeParse(
        await this.send('run.finished', {
          runId,
          lastSeq: batches,
          canceled: false,
          exitCode: 0,
          result: { type: 'result', ...this.result, workloads: [], metrics: {} },
        }),
      );
      if (ack.success && ack.data.ok) break;
      await new Promise((r) => setTimeout(r, 300));
    }
    this.playing = null;
  }

  /** A stream held at `holdAfterLine` goes on (and any later one passes its hold at once). */
  release(): void {
    this.releaseHold();
  }

  close(): void {
    this.stopped = true;
    this.socket.close();
  }
}
