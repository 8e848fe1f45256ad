import { z } from 'zod';
import { storedText } from '../rest/text';
import { Ack, AckError, refusal } from './ack';
import { HarnessEvent, HarnessResultEvent } from '../harness/events';
import { HarnessSpec } from '../harness/spec';
import { LogLimits } from '../benchmarks/log-cap';

/**
 * The `/agents` socket.io namespace. The agent authenticates at the handshake with
 * `auth: { token: 'dryft_agent_…' }` (again on every reconnect), then:
 *   agent → `agent.ready` (capabilities, slots, runs it still holds) → `agent.heartbeat` every few seconds.
 *   server → `run.assign` (ack: accepted or refused) → agent fetches the submission with the one-time
 *   URL, verifies its sha256, runs the harness → `run.started` → `run.batch` (numbered, acked) …
 *   → `run.finished` (acked; retried until acked).
 *   server → `run.cancel` / `run.deadline` / `agent.drain` at any time.
 * Every payload is parsed with these schemas on receipt; a malformed one is refused and logged.
 * Every ack is an {@link Ack} (`ok`, and `error: { code, message }` when refused) with the event's
 * own fields beside; the codes the hub refuses with are {@link AgentRefusalCode}.
 */
export const SlotInfo = z.object({
  index: z.number().int().nonnegative(),
  /** GPU ids (CUDA_VISIBLE_DEVICES values) this slot owns; empty for CPU slots. */
  gpus: z.array(z.string()),
});

export const AgentCapabilities = z.object({
  accelerator: z.enum(['gpu', 'cpu']),
  gpuModel: z.string().nullable(),
  gpuCount: z.number().int().nonnegative(),
  driver: z.string().nullable(),
  harnessVersion: z.string(),
  agentVersion: z.string(),
  /** Benchmarks this agent can run (it has their models); empty = any that fits its hardware. */
  benchmarks: z.array(z.string()),
  /**
   * Benchmark kinds ('decode', 'training') this agent cannot run although its hardware fits, with
   * what to do about it (e.g. its Python has no torch): it is never given those runs, and a run that
   * waits for one says why.
   */
  cannotRun: z.record(z.string(), z.string()).default({}),
  /**
   * GPU agents: the versions runs execute with (python, torch, cuda = torch's CUDA, triton,
   * transformers, driver), read once at start from the harness's interpreter; each run's log
   * repeats them as an `agent` line.
   */
  runtime: z.record(z.string(), z.string()).optional(),
});
export type AgentCapabilities = z.infer<typeof AgentCapabilities>;

/** A run id in an agent event: the UUID the server sent in `run.assign`. */
export const AgentRunId = z
  .string()
  .regex(
    /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i,
    'runId must be the UUID of a run this hub assigned',
  );

/**
 * The codes of the hub's refusals on `/agents`. A final refusal (below) may also carry the code of
 * the API error that refused it (a 4xx `AppError`, e.g. `run_not_found`).
 */
export const AgentRefusalCode = z.enum([
  /** Final: the payload does not parse; the same message will never be accepted. */
  'invalid_payload',
  /** An event this hub does not know (a newer agent?). */
  'unknown_event',
  /** Transient: the hub's database is down; resend later. */
  'database_unavailable',
  /** Transient: the hub failed processing it; resend later. */
  'internal_error',
  /** `agent.ready` of an agent an organizer revoked; it is disconnected. */
  'agent_revoked',
  /** A batch or verdict for a run this hub does not have. */
  'run_not_found',
  /** A batch or verdict for a run assigned to another agent (or to none); stop it. */
  'run_not_assigned',
  /** A batch after a gap; resend from `ackedSeq + 1`. */
  'batch_out_of_order',
  /** A verdict before all its batches were stored; resend them first. */
  'batches_missing',
  /** A handback of a run that has started (or is no longer this agent's): finish it instead. */
  'run_started',
]);
export type AgentRefusalCode = z.infer<typeof AgentRefusalCode>;
/** A refusal of the hub on `/agents` (resend later, or as its code says). */
export const agentRefusal = (code: AgentRefusalCode, message: string) => refusal(code, message);

/**
 * The server will never accept this message as sent (malformed payload, an id that names nothing):
 * resending it cannot help, so the agent drops it and logs why. Any other `ok: false` is
 * transient (resend later).
 */
export const FinalRefusal = z.object({
  ok: z.literal(false),
  final: z.literal(true),
  error: AckError,
});
export type FinalRefusal = z.infer<typeof FinalRefusal>;
export const finalRefusal = (code: string, message: string): FinalRefusal => ({
  ok: false,
  final: true,
  error: { code, message },
});

export const AgentReady = z.object({
  capabilities: AgentCapabilities,
  slots: z.array(SlotInfo).min(1),
  /** Runs still executing here after a reconnect, with the last batch the server acknowledged. */
  activeRuns: z.array(z.object({ runId: z.string(), lastAckedSeq: z.number().int().nonnegative() })),
});
export type AgentReady = z.infer<typeof AgentReady>;

/** The server's answer to `agent.ready`: which of the runs the agent still holds it may continue. */
export const AgentReadyAck = Ack.extend({
  agentId: z.string().optional(),
  name: z.string().optional(),
  /** Heartbeat at least this often (seconds); the lease is renewed by each heartbeat. */
  heartbeatSeconds: z.number().positive().optional(),
  leaseSeconds: z.number().positive().optional(),
  draining: z.boolean().optional(),
  /**
   * Per run in `activeRuns`: keep going (resend batches after `ackedSeq`) or stop it at once. A
   * kept run's `deadlineAt` (epoch milliseconds) is its whole-run deadline now: the organizer may
   * have changed the limit while the agent was away, when no `run.deadline` could reach it.
   */
  runs: z
    .array(
      z.object({
        runId: z.string(),
        ackedSeq: z.number().int().nonnegative(),
        keep: z.boolean(),
        deadlineAt: z.number().nullable().optional(),
      }),
    )
    .default([]),
});
export type AgentReadyAck = z.infer<typeof AgentReadyAck>;

export const AgentHeartbeat = z.object({ activeRuns: z.array(z.string()) });
/** Runs the agent reported that are no longer its (finished elsewhere, canceled, failed by lease): stop them. */
export const AgentHeartbeatAck = Ack.extend({ stop: z.array(z.string()).default([]) });

/**
 * The agent gives back a run it accepted but never started (it is shutting down or could not
 * prepare it): the server puts it back in the queue. A started run is never handed back, it is
 * finished (with infra_error when the agent has to stop it), so no log line is ever stored twice.
 */
export const RunHandback = z.object({ runId: AgentRunId, reason: z.string().max(500) });

export const RunAssign = z.object({
  runId: z.string(),
  benchmarkId: z.string(),
  /**
   * `baseline`: an organizer's re-measure of the baseline engine alone; `calibration`: an
   * organizer's calibration of K (baseline/reference pairs). Neither has a submission.
   */
  mode: z.enum(['public', 'official', 'baseline', 'calibration']),
  slot: z.number().int().nonnegative(),
  /**
   * The team whose submission this is (null or absent: an organizer's re-measure or calibration, or
   * an older hub). The agent keys the candidate's persistent compile cache by it
   * (apps/gpu-agent/src/compile-cache.ts): no team ever reads another's; without it the run
   * compiles from an empty cache.
   */
  teamId: z.string().nullable().optional(),
  /** Null for a baseline re-measure: nothing to download, the harness gets an empty workspace. */
  submission: z
    .object({
      /** One-time download URL (relative to the API URL). */
      url: z.string(),
      sha256: z.string().regex(/^[0-9a-f]{64}$/),
      kind: z.enum(['archive', 'file']),
      filename: z.string(),
    })
    .nullable(),
  spec: HarnessSpec,
  /** Whole-run deadline, epoch milliseconds. */
  deadlineAt: z.number(),
  /** The run's log cap (the benchmark's `logs`): the agent sends no more than the hub stores. */
  logs: LogLimits.optional(),
});
export type RunAssign = z.infer<typeof RunAssign>;

export const RunAssignAck = z.object({ accepted: z.boolean(), reason: z.string().optional() });
export type RunAssignAck = z.infer<typeof RunAssignAck>;

export const RunStarted = z.object({ runId: AgentRunId });

export const BatchEntry = z.discriminatedUnion('type', [
  z.object({
    type: z.literal('log'),
    /** 1-based line number within the run, assigned by the agent. */
    n: z.number().int().positive(),
    ts: z.number(),
    stream: z.enum(['out', 'harness', 'agent']),
    text: z.string().max(16_384),
  }),
  z.object({ type: z.literal('event'), ts: z.number(), event: HarnessEvent }),
]);
export type BatchEntry = z.infer<typeof BatchEntry>;

/** A numbered batch; the server stores it once (dedup by run and seq) and acks. */
export const RunBatch = z.object({
  runId: AgentRunId,
  seq: z.number().int().positive(),
  entries: z.array(BatchEntry).max(5000),
});
export type RunBatch = z.infer<typeof RunBatch>;

export const BatchAck = Ack.extend({
  /** The highest seq the server has stored for this run. */
  ackedSeq: z.number().int().nonnegative(),
  /** Set when the run is no longer this agent's (canceled, failed by lease): stop it. */
  stop: z.boolean().optional(),
});
export type BatchAck = z.infer<typeof BatchAck>;

export const RunFinished = z.object({
  runId: AgentRunId,
  /** The last batch seq sent before this; the server waits until it has stored them all. */
  lastSeq: z.number().int().nonnegative(),
  /** The harness's verdict, or one the agent made (infra_error, timeout, canceled) when it had none. */
  result: HarnessResultEvent,
  canceled: z.boolean(),
  /**
   * Why the agent canceled it, when the hub did not ask: `run_time_limit`, the organizer's
   * whole-run deadline reached (libs/src/rest/whole-run-limit.ts). A plain string, so a reason a
   * newer agent adds does not make an older hub refuse the verdict; the hub acts on the ones it knows.
   */
  cancelReason: z.string().max(64).optional(),
  exitCode: z.number().int().nullable(),
});
export type RunFinished = z.infer<typeof RunFinished>;

export const RunCancel = z.object({ runId: z.string(), reason: z.string() });
export const RunDeadline = z.object({ runId: z.string(), deadlineAt: z.number() });
export const AgentDrain = z.object({ draining: z.boolean() });
/** Sent just before the server disconnects a revoked agent: stop, and do not reconnect with this token. */
export const AgentRevoked = z.object({ code: z.literal('agent_revoked'), reason: z.string() });
export type AgentRevoked = z.infer<typeof AgentRevoked>;
export type RunCancel = z.infer<typeof RunCancel>;
export type RunDeadline = z.infer<typeof RunDeadline>;
export type RunHandback = z.infer<typeof RunHandback>;
export type AgentHeartbeatAck = z.infer<typeof AgentHeartbeatAck>;

export const AgentToServer = {
  'agent.ready': AgentReady,
  'agent.heartbeat': AgentHeartbeat,
  'run.started': RunStarted,
  'run.batch': RunBatch,
  'run.finished': RunFinished,
  'run.handback': RunHandback,
} as const;

export const ServerToAgent = {
  'run.assign': RunAssign,
  'run.cancel': RunCancel,
  'run.deadline': RunDeadline,
  'agent.drain': AgentDrain,
  'agent.revoked': AgentRevoked,
} as const;

/**
 * What each agent event is answered with: its ack schema, or a refusal (`Ack` with `ok: false`, a
 * {@link FinalRefusal} when resending cannot help).
 */
export const AgentToServerAck = {
  'agent.ready': AgentReadyAck,
  'agent.heartbeat': AgentHeartbeatAck,
  'run.started': Ack,
  'run.batch': BatchAck,
  'run.finished': Ack,
  'run.handback': Ack,
} as const satisfies Record<keyof typeof AgentToServer, z.ZodType>;

/**
 * `/agents` as socket.io's typed event maps, derived from the zod maps above and used at both ends
 * (the hub's Namespace, the gpu-agent's client socket): an event whose name, payload or answer is
 * not in the contract does not compile. Payloads are what is sent (`z.input`: defaults may be left
 * out); every agent event takes an ack.
 */
export type AgentToServerEvents = {
  [K in keyof typeof AgentToServer]: (
    payload: z.input<(typeof AgentToServer)[K]>,
    answer: (ack: z.input<(typeof AgentToServerAck)[K]> | Ack) => void,
  ) => void;
};

/** The hub's emits to an agent; only `run.assign` is awaited (its answer says whether the agent took the run). */
export type ServerToAgentEvents = {
  [K in Exclude<keyof typeof ServerToAgent, 'run.assign'>]: (
    payload: z.input<(typeof ServerToAgent)[K]>,
  ) => void;
} & {
  'run.assign': (payload: z.input<typeof RunAssign>, answer: (ack: RunAssignAck) => void) => void;
};

export const AgentView = z.object({
  id: z.string(),
  name: z.string(),
  status: z.enum(['online', 'offline', 'draining', 'revoked']),
  capabilities: AgentCapabilities.nullable(),
  slots: z.number().int(),
  busySlots: z.number().int(),
  currentRuns: z.array(z.string()),
  lastHeartbeatAt: z.string().nullable(),
  createdAt: z.string(),
});
export type AgentView = z.infer<typeof AgentView>;

export const CreateAgentBody = z.object({ name: storedText(z.string().trim().min(1).max(80)) });
export const CreatedAgentView = AgentView.extend({ token: z.string() });
