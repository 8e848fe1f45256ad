import { z } from 'zod';

/**
 * Events the trusted harness writes, one JSON object per line, on its own file descriptor
 * (`--events-fd N`). The submission's stdout/stderr never reach this channel, so nothing a
 * submission prints can become an event. The Python side (`harness/harness/events.py`) writes
 * exactly these shapes; a test runs the harness and parses every line with `HarnessEvent`.
 */
export const FailureCode = z.enum([
  'incorrect_output',
  'candidate_error',
  'timeout',
  'latency_limit',
  'memory_limit',
  'unstable_timing',
  'infra_error',
  'harness_error',
  'rule_violation',
]);
export type FailureCode = z.infer<typeof FailureCode>;

/** A line of the harness's own narration (phases, warnings); shown in the run log. */
export const HarnessLogEvent = z.object({
  type: z.literal('log'),
  level: z.enum(['info', 'warn', 'error']),
  message: z.string(),
});

/** One measured (or warm-up) sample of one workload. Decode fills the timing fields. */
export const HarnessSampleEvent = z.object({
  type: z.literal('sample'),
  workload: z.string(),
  index: z.number().int().nonnegative(),
  warmup: z.boolean(),
  ttftMs: z.number().nonnegative().nullable(),
  tpotMs: z.number().nonnegative().nullable(),
  tps: z.number().nonnegative().nullable(),
  totalMs: z.number().nonnegative(),
  tokens: z.number().int().nonnegative(),
  batchSize: z.number().int().positive().optional(),
  promptLength: z.number().int().nonnegative().optional(),
  peakMemoryBytes: z.number().nonnegative().nullable().optional(),
  /** Free-form numeric metrics (training: loss, accuracy, updates…). */
  metrics: z.record(z.string(), z.number()).optional(),
});

/** Training progress, a point on the loss curve. */
export const HarnessMetricEvent = z.object({
  type: z.literal('metric'),
  name: z.string(),
  step: z.number().int().nonnegative(),
  value: z.number(),
  elapsedMs: z.number().nonnegative(),
});

/** One rule the run was checked against (output, latency, memory, timing_stability, …). */
export const HarnessCheckEvent = z.object({
  type: z.literal('check'),
  name: z.string(),
  passed: z.boolean(),
  detail: z.string(),
});

/**
 * Baseline figures (medians) measured on this machine. `hardware` is the cache key: the GPU model
 * name, or "cpu". The hub caches them per benchmark, key and rules version only from official runs,
 * whose baseline is measured paired with the candidate (`paired: true`); a public run's own
 * baseline measurement (`paired: false`) is never cached.
 */
const BaselineMedians = z.record(
  z.string(),
  z.object({ totalMs: z.number().positive(), ttftMs: z.number().nonnegative(), tpotMs: z.number().nonnegative() }),
);

export const HarnessBaselineEvent = z.object({
  type: z.literal('baseline'),
  hardware: z.string(),
  paired: z.boolean().optional(),
  /** Timed samples per workload behind each median. */
  samples: z.number().int().positive().optional(),
  workloads: BaselineMedians,
});

/**
 * A baseline re-measure's figures (spec mode `baseline`), in its result: the medians of the trusted
 * baseline engine alone, `samples` timed samples per workload, on the machine whose key is `hardware`.
 */
export const MeasuredBaseline = z.object({
  hardware: z.string(),
  samples: z.number().int().positive(),
  workloads: BaselineMedians,
});
export type MeasuredBaseline = z.infer<typeof MeasuredBaseline>;

export const WorkloadSummary = z.object({
  workload: z.string(),
  samples: z.number().int().nonnegative(),
  tps: z.number().nonnegative().nullable(),
  ttftMs: z.number().nonnegative().nullable(),
  tpotMs: z.number().nonnegative().nullable(),
  totalMs: z.number().nonnegative().nullable(),
  /** (max - min) / median of the per-sample TPOT, in percent. */
  spreadPct: z.number().nonnegative().nullable(),
  /** Baseline time ÷ candidate time for this workload (1.0 = baseline speed); official: the median over pairs. */
  speedup: z.number().nonnegative().nullable(),
  /** Official (paired) runs: interquartile range ÷ median of the paired ratios, percent. */
  ratioSpreadPct: z.number().nonnegative().nullable().optional(),
});
export type WorkloadSummary = z.infer<typeof WorkloadSummary>;

/**
 * The 95 % interval of a decode score: a seeded percentile bootstrap over the pairs of an official
 * run (harness/harness/decode/pairing.py). halfWidth = (high - low) / 2, in score points.
 */
export const ScoreInterval = z.object({
  low: z.number(),
  high: z.number(),
  halfWidth: z.number().nonnegative(),
  level: z.number().positive().max(1),
});
export type ScoreInterval = z.infer<typeof ScoreInterval>;

/**
 * What a decode score was measured against. `reference`: paired with the trusted reference engine
 * and scaled by K (baseline time ÷ reference time, calibrated per hardware key); `baseline`: paired
 * with (official) or compared to (public) the eager baseline itself, the fallback where no K exists.
 */
export const ScoringBasis = z.object({
  against: z.enum(['reference', 'baseline']),
  calibrated: z.boolean(),
  hardware: z.string(),
  /** K's 95 % half-width over this run's workloads, percent (null without K). */
  kHalfWidthPct: z.number().nonnegative().nullable(),
  note: z.string(),
});
export type ScoringBasis = z.infer<typeof ScoringBasis>;

/**
 * A calibration run's measurement (spec mode `calibration`): per workload, one ratio per pair,
 * baseline totalMs ÷ reference totalMs on the same prompts (interleaved AB/BA). The hub pools the
 * runs of one benchmark, rules version and hardware key into K.
 */
export const MeasuredCalibration = z.object({
  hardware: z.string(),
  pairs: z.number().int().positive(),
  /** Wall seconds the run held its engines: loads, warm-ups and pairs (what the calibration cost). */
  seconds: z.number().nonnegative(),
  /** This run's own 95 % half-width of K (geometric mean over workloads), percent. */
  halfWidthPct: z.number().nonnegative(),
  workloads: z.record(z.string(), z.object({ ratios: z.array(z.number().positive()).min(1) })),
});
export type MeasuredCalibration = z.infer<typeof MeasuredCalibration>;

/** The verdict. Exactly one per run, always the last event. */
export const HarnessResultEvent = z.object({
  type: z.literal('result'),
  status: z.enum(['succeeded', 'failed']),
  failureCode: FailureCode.nullable(),
  message: z.string(),
  /** Decode: 100 × geometric mean of speedups. Training: accuracy in percent. Null when failed. */
  score: z.number().nullable(),
  workloads: z.array(WorkloadSummary),
  metrics: z.record(z.string(), z.number()),
  /** For candidate_error / incorrect_output: the traceback or first bad position, shown to the team. */
  detail: z.string().optional(),
  /**
   * Decode, official and succeeded: the score's 95 % **ranking interval** (the pairs alone, widened
   * by runSpreadPct; K is shared by everyone on the board): the leaderboard's ≈ marks use it.
   */
  interval: ScoreInterval.optional(),
  /** Decode, official: the **absolute interval**, the ranking interval with K's interval folded in. */
  absoluteInterval: ScoreInterval.nullable().optional(),
  /** Decode, official and public: what the score was measured against. */
  scoring: ScoringBasis.nullable().optional(),
  /**
   * Decode, official: the run's secret nonce (32 lowercase hex) mixed into the hidden workloads'
   * prompt seeds. Organizers only: the hub never shows it to the team, the harness never logs it.
   */
  promptNonce: z
    .string()
    .regex(/^[0-9a-f]{32}$/)
    .nullable()
    .optional(),
  /** Decode, calibration run (spec mode `calibration`), succeeded: the pairs' ratios the hub pools. */
  calibration: MeasuredCalibration.optional(),
  /** Decode, official: pairs measured per workload. */
  pairs: z.number().int().positive().optional(),
  /** Decode, public: one unpaired sample against the cached baseline, feedback only. */
  indicative: z.boolean().optional(),
  /** Decode, baseline re-measure (spec mode `baseline`), succeeded: the medians the hub caches. */
  baseline: MeasuredBaseline.optional(),
});

/**
 * For the agent only (never forwarded to the hub): an untrusted child of the harness started or
 * ended. A harness that dies without a verdict while the candidate's child runs is the candidate's
 * failure (apps/gpu-agent/README.md, "Who is blamed").
 */
export const HarnessChildEvent = z.object({
  type: z.literal('child'),
  /** `baseline` and `reference` are trusted engines the harness owns; `candidate` and `training` are not. */
  role: z.enum(['baseline', 'reference', 'candidate', 'training']),
  state: z.enum(['started', 'stopped']),
});
export type HarnessChildEvent = z.infer<typeof HarnessChildEvent>;

export const HarnessEvent = z.discriminatedUnion('type', [
  HarnessLogEvent,
  HarnessSampleEvent,
  HarnessMetricEvent,
  HarnessCheckEvent,
  HarnessBaselineEvent,
  HarnessResultEvent,
]);
export type HarnessEvent = z.infer<typeof HarnessEvent>;
export type HarnessSampleEvent = z.infer<typeof HarnessSampleEvent>;
export type HarnessCheckEvent = z.infer<typeof HarnessCheckEvent>;
export type HarnessResultEvent = z.infer<typeof HarnessResultEvent>;
export type HarnessBaselineEvent = z.infer<typeof HarnessBaselineEvent>;
export type HarnessMetricEvent = z.infer<typeof HarnessMetricEvent>;
