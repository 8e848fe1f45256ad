import {
  Ack,
  AgentDrain,
  AgentHeartbeatAck,
  AgentReadyAck,
  AgentRevoked,
  describeRefusal,
  FinalRefusal,
  refusal,
  RunAssign,
  RunCancel,
  RunDeadline,
  ServerToAgent,
} from '@dryft/libs';
import type {
  AgentCapabilities,
  AgentRefusalCode,
  AgentToServerEvents,
  RunBatch,
  RunFinished,
  ServerToAgentEvents,
} from '@dryft/libs';
import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { io, Socket } from 'socket.io-client';
import type { AgentConfig } from './config';
import { cannotRunKinds, detectGpu, formatRuntime, pickPython, probeRuntime } from './config';
import { AgentMetrics } from './agent-metrics';
import { RunJob } from './run-job';

const ACK_TIMEOUT_MS = 15_000;
/**
 * How long an agent that holds runs keeps retrying a hub that refuses its token. A hub restarting
 * on another token file, or a token rotated by hand, is fixed by then; a revoked agent stops at once.
 */
export const TOKEN_REFUSED_GRACE_MS = Number(process.env.DRYFT_AGENT_TOKEN_GRACE_MS ?? 10 * 60_000);
/** Handshake refusals that no retry can fix: stop and say so. */
const FATAL_CODES = new Set([
  'agent_revoked',
  'agent_token_invalid',
  'token_malformed',
  'token_bad_checksum',
  'agent_token_required',
]);
/** What a verdict says happened: canceled, or the harness's status. */
const verdictStatus = (msg: RunFinished): string => (msg.canceled ? 'canceled' : msg.result.status);

/** A refused verdict that resending cannot place (no such run, or another agent's now): dropped. */
const VERDICT_NOT_WANTED: readonly AgentRefusalCode[] = ['run_not_found', 'run_not_assigned'];

function version(file: string, pattern: RegExp, fallback: string): string {
  try {
    return pattern.exec(readFileSync(file, 'utf8'))?.[1] ?? fallback;
  } catch {
    return fallback;
  }
}

export interface AgentOptions {
  sandboxed: boolean;
  log?: (message: string) => void;
  /** Called when the hub refuses the token for good (revoked, unknown). */
  onFatal?: (message: string) => void;
}

/**
 * A run the hub kept when this agent (re)connected: it takes the run's deadline as the hub has it
 * now (the organizer may have changed the limit while this agent was away, and the `run.deadline`
 * sent then never arrived), then resends the batches the hub has not stored.
 */
export function resumeKeptRun(
  run: Pick<RunJob, 'setDeadline' | 'outbox'>,
  held: AgentReadyAck['runs'][number],
): void {
  if (typeof held.deadlineAt === 'number') run.setDeadline(held.deadlineAt);
  run.outbox.acknowledge(held.ackedSeq);
  void run.outbox.pump();
}

/**
 * The daemon: one socket to the hub (`/agents`), one executor per busy slot. It reconnects with
 * exponential backoff and jitter, says which runs it still holds on every `agent.ready`, resends
 * unacknowledged batches and verdicts, and heartbeats to keep the leases of its runs.
 */
export class Agent {
  /** Typed by the contract both ends share (libs/src/protocol/agents.ts). */
  private socket!: Socket<ServerToAgentEvents, AgentToServerEvents>;
  private readonly runs = new Map<string, RunJob>();
  /** Verdicts waiting for the server's ack (kept across reconnects). */
  private readonly verdicts = new Map<string, { msg: RunFinished; resolve: () => void }>();
  private heartbeat?: NodeJS.Timeout;
  private heartbeatMs = 5_000;
  private draining = false;
  private shuttingDown = false;
  private ready = false;
  private reconnectAttempt = 0;
  private reconnectTimer?: NodeJS.Timeout;
  /** The token this agent connects with (re-read from its file when the hub refuses it). */
  private token: string;
  /** When the hub started refusing the token, while this agent holds runs. */
  private refusedSince?: number;
  /** The hub said this token is revoked: never reconnect with it. */
  private revoked = false;
  readonly capabilities: AgentCapabilities;
  /** Served on agent.json's `metrics.port` when set (agent-metrics.ts). */
  readonly metrics = new AgentMetrics(() => ({
    slots: this.config.slots.length,
    busySlots: this.runs.size,
    connected: this.isConnected,
    draining: this.draining || this.shuttingDown,
  }));
  private connectedOnce = false;
  private readonly log: (m: string) => void;

  constructor(
    private readonly config: AgentConfig,
    private readonly options: AgentOptions,
  ) {
    this.log = options.log ?? ((m) => console.log(`[agent] ${m}`));
    this.token = config.token;
    const gpu = config.accelerator === 'cpu' ? { model: null, count: 0, driver: null } : detectGpu();
    const accelerator = config.accelerator ?? (config.slots.some((s) => s.gpus.length) ? 'gpu' : 'cpu');
    this.capabilities = {
      accelerator,
      gpuModel: config.gpuModel !== undefined ? config.gpuModel : gpu.model,
      gpuCount:
        accelerator === 'gpu' ? Math.max(gpu.count, new Set(config.slots.flatMap((s) => s.gpus)).size) : 0,
      driver: gpu.driver,
      harnessVersion: version(
        path.join(config.harness.dir!, 'harness', '__init__.py'),
        /__version__\s*=\s*"([^"]+)"/,
        'unknown',
      ),
      agentVersion: version(path.resolve(__dirname, '..', 'package.json'), /"version":\s*"([^"]+)"/, '0.0.0'),
      benchmarks: config.benchmarks,
      // A replaced harness command (tests, other evaluators) brings its own interpreter.
      cannotRun: config.harness.command ? {} : cannotRunKinds(config.harness.python),
    };
    for (const [kind, why] of Object.entries(this.capabilities.cannotRun))
      this.log(`${kind} benchmarks are off on this agent: ${why}`);
    if (accelerator === 'gpu') {
      const runtime = probeRuntime(pickPython(config.harness.python, ['torch']), gpu.driver);
      if (runtime) this.capabilities.runtime = runtime;
      this.log(`runtime: ${runtime ? formatRuntime(runtime) : 'the harness interpreter could not be asked'}`);
    }
  }

  get activeRunIds(): string[] {
    return [...this.runs.keys()];
  }

  get isConnected(): boolean {
    return Boolean(this.socket?.connected && this.ready);
  }

  start(): void {
    const url = new URL('/agents', this.config.apiUrl).toString();
    this.socket = io(url, {
      auth: { token: this.token },
      transports: ['websocket'],
      // Reconnection is ours (below): socket.io's own stops after a server-side disconnect.
      reconnection: false,
      timeout: 10_000,
    });
    this.socket.on('connect', () => void this.onConnect());
    this.socket.on('connect_error', (err: Error & { data?: { code?: string } }) => {
      const code = err.data?.code;
      if (code && FATAL_CODES.has(code)) {
        this.refused(code, err.message);
        return;
      }
      this.log(`cannot reach the hub at ${this.config.apiUrl}: ${err.message}`);
      this.scheduleReconnect();
    });
    this.socket.on('disconnect', (reason) => {
      this.ready = false;
      if (this.heartbeat) clearInterval(this.heartbeat);
      this.log(`disconnected (${reason})`);
      if (this.revoked) return;
      if (!this.shuttingDown || this.runs.size || this.verdicts.size) this.scheduleReconnect();
    });
    // Each payload is parsed before use (onServerEvent): the types say what a current hub sends.
    for (const name of Object.keys(ServerToAgent) as (keyof ServerToAgentEvents)[]) {
      this.socket.on(name, (...args: unknown[]) => this.onServerEvent(name, args));
    }
    this.socket.onAny((event: string, ...args: unknown[]) => {
      if (event in ServerToAgent) return;
      this.log(`the hub sent an unknown event "${event}"; ignored`);
      const ack = args[args.length - 1];
      if (typeof ack === 'function')
        (ack as (r: unknown) => void)(refusal('unknown_event', `Unknown event "${event}".`));
    });
  }

  /** Drops the socket without telling the hub (tests: a network cut); reconnects with backoff. */
  simulateNetworkCut(): void {
    this.socket.io.engine?.close();
  }

  private scheduleReconnect(): void {
    if (this.reconnectTimer || this.socket.connected) return;
    // Exponential backoff with full jitter: a fleet that lost the hub does not come back in lockstep.
    // Capped lower while it holds runs, so their leases survive a hub restart.
    const max = this.runs.size || this.verdicts.size ? 5_000 : 15_000;
    const cap = Math.min(max, 300 * 2 ** this.reconnectAttempt++);
    const delay = Math.round(cap / 2 + Math.random() * (cap / 2));
    this.reconnectTimer = setTimeout(() => {
      this.reconnectTimer = undefined;
      if (!this.socket.connected) this.socket.connect();
    }, delay);
  }

  /**
   * The hub refused the token. Revoked: stop now. Otherwise a changed token file is picked up, and
   * while this agent holds runs it never just exits (a restarted hub may not know it yet): it keeps
   * retrying for TOKEN_REFUSED_GRACE_MS, loudly, and stops only after that.
   */
  private refused(code: string, message: string): void {
    if (code !== 'agent_revoked' && this.config.tokenFile) {
      let fresh = '';
      try {
        fresh = readFileSync(this.config.tokenFile, 'utf8').trim();
      } catch {
        /* unreadable now: keep the one we have */
      }
      if (fresh && fresh !== this.token) {
        this.token = fresh;
        this.config.token = fresh; // also what run downloads present
        this.socket.auth = { token: fresh };
        this.log(
          `the hub refused the old token; ${this.config.tokenFile} holds a new one: reconnecting with it`,
        );
        this.scheduleReconnect();
        return;
      }
    }
    const holding = this.runs.size + this.verdicts.size;
    if (code === 'agent_revoked' || holding === 0) {
      this.log(`the hub refused this agent: ${message}`);
      this.fatal(message);
      return;
    }
    this.refusedSince ??= Date.now();
    const left = TOKEN_REFUSED_GRACE_MS - (Date.now() - this.refusedSince);
    if (left <= 0) {
      this.log(
        `the hub has refused this agent for ${Math.round(TOKEN_REFUSED_GRACE_MS / 1000)} s: ${message}`,
      );
      this.fatal(message);
      return;
    }
    const bar = '!'.repeat(80);
    console.error(
      `${bar}\n!! The hub at ${this.config.apiUrl} refuses this agent's token: ${message}\n` +
        `!! This agent still holds ${holding} run(s) (${[...new Set([...this.runs.keys(), ...this.verdicts.keys()])].join(', ')}); ` +
        `it keeps their output and retries for ${Math.round(left / 1000)} s more before giving up.\n` +
        `!! Fix: give the hub this agent's token back, or put the new token in ${this.config.tokenFile ?? 'the agent config'}.\n${bar}`,
    );
    this.scheduleReconnect();
  }

  private fatal(message: string): void {
    for (const run of this.runs.values()) run.stop('lost', 'this agent was revoked');
    // Exit only once the runs are stopped and their folders wiped (bounded by the kill grace).
    const stopped = Promise.all([...this.runs.values()].map((r) => r.done));
    const bound = new Promise((r) => setTimeout(r, this.config.cancelGraceMs + 3_000));
    void Promise.race([stopped, bound]).then(() => this.options.onFatal?.(message));
  }

  private async onConnect(): Promise<void> {
    this.reconnectAttempt = 0;
    this.refusedSince = undefined;
    const activeRuns = [...this.runs.values()].map((r) => ({
      runId: r.runId,
      lastAckedSeq: r.outbox.ackedSeq,
    }));
    for (const v of this.verdicts.values())
      if (!this.runs.has(v.msg.runId)) activeRuns.push({ runId: v.msg.runId, lastAckedSeq: v.msg.lastSeq });
    let ack;
    try {
      const raw: unknown = await this.socket.timeout(ACK_TIMEOUT_MS).emitWithAck('agent.ready', {
        capabilities: this.capabilities,
        slots: this.config.slots,
        activeRuns,
      });
      ack = AgentReadyAck.parse(raw);
    } catch (err) {
      this.log(`agent.ready failed: ${(err as Error).message}; reconnecting`);
      this.socket.disconnect();
      this.scheduleReconnect();
      return;
    }
    if (!ack.ok) {
      // A hub that cannot answer now (its database is down) is asked again after a backoff.
      this.log(`the hub refused agent.ready: ${describeRefusal(ack)}; reconnecting`);
      this.socket.disconnect();
      this.scheduleReconnect();
      return;
    }
    this.ready = true;
    if (this.connectedOnce) this.metrics.reconnects.inc();
    this.connectedOnce = true;
    this.draining = this.draining || Boolean(ack.draining);
    this.log(
      `connected to ${this.config.apiUrl} as "${ack.name}" (${this.config.slots.length} slot(s), ${this.options.sandboxed ? 'sandboxed' : 'NO SANDBOX'})`,
    );
    for (const r of ack.runs) {
      const run = this.runs.get(r.runId);
      if (!r.keep) {
        run?.stop('lost', 'the hub no longer assigns this run to this agent');
        const v = this.verdicts.get(r.runId);
        if (v) {
          // Usually the verdict itself, sent before the connection dropped, reached the hub and
          // ended the run; or the run was ended without it (canceled, failed by lease). Either way
          // resending cannot change it: say so, so the operator is not left guessing.
          this.verdicts.delete(r.runId);
          v.resolve();
          this.log(
            `run ${r.runId}: the hub holds this run as ended; verdict (${verdictStatus(v.msg)}) not resent`,
          );
        }
        continue;
      }
      if (run) resumeKeptRun(run, r);
    }
    for (const v of this.verdicts.values()) void this.sendVerdict(v.msg.runId);
    this.heartbeatMs = Math.max(200, (ack.heartbeatSeconds ?? 5) * 1000);
    if (this.heartbeat) clearInterval(this.heartbeat);
    this.heartbeat = setInterval(() => void this.beat(), this.heartbeatMs);
  }

  private async beat(): Promise<void> {
    if (!this.isConnected) return;
    try {
      const raw: unknown = await this.socket
        .timeout(this.heartbeatMs * 2)
        .emitWithAck('agent.heartbeat', { activeRuns: this.activeRunIds });
      const ack = AgentHeartbeatAck.parse(raw);
      for (const runId of ack.stop) this.runs.get(runId)?.stop('lost', 'the hub ended this run');
    } catch (err) {
      this.log(`heartbeat not acknowledged: ${(err as Error).message}`);
    }
  }

  private onServerEvent(name: keyof ServerToAgentEvents, args: unknown[]): void {
    const ack =
      typeof args[args.length - 1] === 'function'
        ? (args[args.length - 1] as (r: unknown) => void)
        : () => undefined;
    const payload = args[0];
    switch (name) {
      case 'run.assign': {
        const parsed = RunAssign.safeParse(payload);
        if (!parsed.success) {
          this.log(`malformed run.assign refused: ${parsed.error.issues[0]?.message}`);
          ack({ accepted: false, reason: 'malformed assignment' });
          return;
        }
        ack(this.accept(parsed.data));
        return;
      }
      case 'run.cancel': {
        const parsed = RunCancel.safeParse(payload);
        if (!parsed.success) return this.log('malformed run.cancel ignored');
        this.runs.get(parsed.data.runId)?.stop('cancel', parsed.data.reason);
        ack({ ok: true });
        return;
      }
      case 'run.deadline': {
        const parsed = RunDeadline.safeParse(payload);
        if (!parsed.success) return this.log('malformed run.deadline ignored');
        this.runs.get(parsed.data.runId)?.setDeadline(parsed.data.deadlineAt);
        ack({ ok: true });
        return;
      }
      case 'agent.revoked': {
        const parsed = AgentRevoked.safeParse(payload);
        const reason = parsed.success ? parsed.data.reason : 'the hub revoked this agent';
        this.log(`the hub revoked this agent: ${reason}`);
        this.revoked = true;
        this.fatal(reason);
        return;
      }
      case 'agent.drain': {
        const parsed = AgentDrain.safeParse(payload);
        if (!parsed.success) return this.log('malformed agent.drain ignored');
        this.draining = parsed.data.draining;
        this.log(
          this.draining ? 'draining: finishing current runs, taking no new ones' : 'no longer draining',
        );
        ack({ ok: true });
        return;
      }
    }
  }

  /** Accept (ack first, the CI-runner way), then run in the background. */
  private accept(assign: RunAssign): { accepted: boolean; reason?: string } {
    if (this.shuttingDown) return { accepted: false, reason: 'shutting down' };
    if (this.draining) return { accepted: false, reason: 'draining' };
    if (this.runs.has(assign.runId)) return { accepted: true };
    const slot = this.config.slots.find((s) => s.index === assign.slot);
    if (!slot) return { accepted: false, reason: `no slot ${assign.slot}` };
    if ([...this.runs.values()].some((r) => r.assign.slot === assign.slot))
      return { accepted: false, reason: `slot ${assign.slot} is busy` };
    const run = new RunJob(assign, this.host(), slot.gpus);
    this.runs.set(assign.runId, run);
    this.metrics.runsAccepted.inc();
    this.log(`run ${assign.runId} accepted on slot ${assign.slot}`);
    void run.execute().finally(() => {
      this.runs.delete(assign.runId);
      this.log(`run ${assign.runId} done; workspace wiped`);
    });
    return { accepted: true };
  }

  private host() {
    return {
      config: this.config,
      sandboxed: this.options.sandboxed,
      runtime: this.capabilities.runtime,
      connected: () => this.isConnected,
      sendBatch: (batch: RunBatch) => {
        this.metrics.uploadBytes.inc(Buffer.byteLength(JSON.stringify(batch)));
        return this.socket.timeout(ACK_TIMEOUT_MS).emitWithAck('run.batch', batch);
      },
      started: async (runId: string) => {
        if (!this.isConnected) return;
        const raw: unknown = await this.socket.timeout(ACK_TIMEOUT_MS).emitWithAck('run.started', { runId });
        const final = FinalRefusal.safeParse(raw);
        if (final.success)
          this.log(`run ${runId}: the hub refused run.started for good (${describeRefusal(final.data)})`);
      },
      finished: (msg: RunFinished) =>
        new Promise<void>((resolve) => {
          this.metrics.runsFinished.inc({ status: verdictStatus(msg) });
          this.verdicts.set(msg.runId, { msg, resolve });
          void this.sendVerdict(msg.runId);
        }),
      handback: async (runId: string, reason: string) => {
        if (!this.isConnected) return false;
        try {
          const raw: unknown = await this.socket
            .timeout(ACK_TIMEOUT_MS)
            .emitWithAck('run.handback', { runId, reason });
          const final = FinalRefusal.safeParse(raw);
          if (final.success)
            this.log(`run ${runId}: the hub refused the handback for good (${describeRefusal(final.data)})`);
          return Ack.parse(raw).ok;
        } catch {
          return false;
        }
      },
      log: this.log,
      downloaded: (bytes: number) => this.metrics.downloadBytes.inc(bytes),
    };
  }

  /** Sends a verdict until acknowledged; a reconnect calls it again for every verdict still waiting. */
  private async sendVerdict(runId: string): Promise<void> {
    const v = this.verdicts.get(runId);
    if (!v || !this.isConnected) return;
    try {
      this.metrics.uploadBytes.inc(Buffer.byteLength(JSON.stringify(v.msg)));
      const raw: unknown = await this.socket.timeout(ACK_TIMEOUT_MS).emitWithAck('run.finished', v.msg);
      const final = FinalRefusal.safeParse(raw);
      if (final.success) {
        // Resending the same verdict cannot help: drop it and say why.
        this.verdicts.delete(runId);
        v.resolve();
        this.log(
          `run ${runId}: the hub refused the verdict for good (${describeRefusal(final.data)}); not resending`,
        );
        return;
      }
      const ack = Ack.parse(raw);
      if (ack.ok) {
        this.verdicts.delete(runId);
        v.resolve();
        this.log(`run ${runId}: verdict acknowledged (${verdictStatus(v.msg)})`);
        return;
      }
      if (ack.error && VERDICT_NOT_WANTED.includes(ack.error.code as AgentRefusalCode)) {
        // The hub has no such run, or it is another agent's now: resending cannot place it.
        this.log(`run ${runId}: verdict refused (${describeRefusal(ack)}); not resending`);
        this.verdicts.delete(runId);
        v.resolve();
        return;
      }
      this.log(`run ${runId}: verdict refused (${describeRefusal(ack)}); retrying`);
    } catch (err) {
      this.log(`run ${runId}: verdict not acknowledged (${(err as Error).message}); retrying`);
    }
    setTimeout(() => void this.sendVerdict(runId), 1_000).unref();
  }

  /**
   * SIGTERM: take nothing new; runs that have not started go back to the queue; running ones get
   * `shutdownGraceMs` to finish, then are stopped and reported as infra_error. Resolves when every
   * verdict is acknowledged (or the hub is unreachable for good).
   */
  async shutdown(): Promise<void> {
    if (this.shuttingDown) return;
    this.shuttingDown = true;
    this.log(`shutting down: ${this.runs.size} run(s) in progress`);
    for (const run of this.runs.values())
      if (!run.started) run.stop('shutdown', 'the agent is shutting down');
    const all = Promise.all([...this.runs.values()].map((r) => r.done));
    const grace = new Promise<'grace'>((r) => setTimeout(() => r('grace'), this.config.shutdownGraceMs));
    if ((await Promise.race([all.then(() => 'done' as const), grace])) === 'grace') {
      for (const run of this.runs.values()) run.stop('shutdown', 'the agent is shutting down');
      await all;
    }
    const pending = [...this.verdicts.values()].map(
      (v) => new Promise<void>((r) => (v.resolve = ((orig) => () => (orig(), r()))(v.resolve))),
    );
    await Promise.race([Promise.all(pending), new Promise((r) => setTimeout(r, 15_000))]);
    if (this.heartbeat) clearInterval(this.heartbeat);
    if (this.reconnectTimer) clearTimeout(this.reconnectTimer);
    this.socket.disconnect();
    this.metrics.close();
  }
}
