import { z } from 'zod';
import { RuntimePins } from './runtime-pins';
import { DecodeChecks, DecodeLimits, DecodeWorkload, TrainingSpecTask } from '../harness/spec';
import { DEFAULT_LOG_LIMITS, LogLimits } from './log-cap';

/**
 * A benchmark definition file (`config/benchmarks/*.yaml`). Values here are the defaults an
 * organizer starts from; open/closed, the whole-run time limit and the rules version can then be
 * changed at run time through the organizer API (stored in the database, never in the file).
 */
const Id = z.string().regex(/^[a-z0-9][a-z0-9-]{1,62}$/, 'lowercase letters, digits and dashes');

/** How many of the board's best are verified, and how many times each is re-run. */
export const FinalBoardSettings = z.object({
  topK: z.number().int().min(1).max(100),
  reruns: z.number().int().min(1).max(25),
});
export type FinalBoardSettings = z.infer<typeof FinalBoardSettings>;
export const DEFAULT_FINAL_BOARD: FinalBoardSettings = { topK: 10, reruns: 3 };

const Common = z.object({
  id: Id,
  title: z.string().min(1),
  summary: z.string().min(1),
  ranks: z.enum(['teams', 'users']),
  rulesVersion: z.number().int().positive(),
  submissionsOpen: z.boolean(),
  evaluationsOpen: z.boolean(),
  /** Whole-run time limit: a run over it is canceled with an explanation, also with no agent reporting. */
  runTimeLimitSeconds: z.number().int().positive(),
  /**
   * When no agent able to run this benchmark has been seen for this long, a queued run's page
   * suggests cancelling it (a run canceled before it starts is refunded).
   */
  noCapableAgentHintSeconds: z.number().int().positive().default(300),
  hardware: z.object({
    accelerator: z.enum(['gpu', 'cpu']),
    /** GPU model names (as the agent reports them) that qualify; empty for CPU benchmarks. */
    gpuModels: z.array(z.string()),
  }),
  /** The starter folder served as the "Download starter" archive or sample file: relative to the checkout, or absolute. */
  starter: z.string(),
  scoring: z.object({ unit: z.string(), description: z.string() }),
  announcement: z.string().optional(),
  /** The cap on each run's stored log (libs/src/benchmarks/log-cap.ts): defaults when left out. */
  logs: LogLimits.default(DEFAULT_LOG_LIMITS),
  /**
   * The page's pinned runtime versions, checked against each run's agent (runtime-pins.ts); left
   * out, nothing is checked (CPU practice benchmarks run on the agent's own Python).
   */
  runtimePins: RuntimePins.optional(),
  /**
   * The verified final board (docs/API.md, "Final board"): at round close the top `topK` holders'
   * best runs are re-run `reruns` times each and ranked by the median. Left out: no final board
   * is started at a scheduled close (the organizer may still start one with these defaults).
   */
  finalBoard: FinalBoardSettings.optional(),
});

export const DailyLimits = z.object({
  public: z.number().int().positive().optional(),
  official: z.number().int().positive().optional(),
});

/**
 * A hidden workload of a definition: its shape, and its prompt seed where the operator's private
 * BENCHMARKS_DIR supplies one. The shipped config/benchmarks carry shapes only; the hub derives
 * the seed of a hidden workload without one from its per-install secret (README, "Hidden workloads").
 */
export const HiddenWorkload = DecodeWorkload.extend({ seed: DecodeWorkload.shape.seed.optional() });
export type HiddenWorkload = z.infer<typeof HiddenWorkload>;

/** How an organizer's calibration of K runs by default (POST …/baselines/remeasure may override). */
export const CalibrationDefaults = z.object({
  /** Stop adding pairs once K's 95 % half-width is within ± this percent. */
  targetHalfWidthPct: z.number().positive().max(50).default(1),
  /** The most baseline/reference pairs per workload of one calibration run. */
  maxPairs: z.number().int().positive().default(200),
  /** The most GPU seconds one calibration run spends on its pairs. */
  budgetSeconds: z.number().positive().default(600),
});
export type CalibrationDefaults = z.infer<typeof CalibrationDefaults>;

export const DecodeBenchmarkDefinition = Common.extend({
  kind: z.literal('decode'),
  submission: z.object({ type: z.literal('archive') }),
  model: z.object({
    family: z.enum(['toy', 'qwen3']),
    /** Where agents find the weights; an agent's own model-path setting overrides it. */
    path: z.string(),
    checkpoint: z.string().optional(),
    revision: z.string().optional(),
  }),
  /** The sandbox's runtime versions in words (the benchmark page's runtime pins), e.g. "Python 3.11, CUDA 12.4, PyTorch 2.5.1". */
  runtime: z.string().optional(),
  /** Trusted baseline engine folder (score 100). */
  baselineEngine: z.string(),
  /**
   * Folder of the trusted, harness-owned reference engine (steady, fast) that official runs pair the
   * candidate with, scored in baseline points through the calibrated K; null: paired with the
   * baseline as before.
   */
  referenceEngine: z.string().nullable().default(null),
  /** The organizer's calibration of K (baseline time ÷ reference time per hardware key). */
  calibration: CalibrationDefaults.default({ targetHalfWidthPct: 1, maxPairs: 200, budgetSeconds: 600 }),
  workloads: z.object({ public: z.array(DecodeWorkload).min(1), hidden: z.array(HiddenWorkload).min(1) }),
  samples: z
    .object({
      /** Timed candidate samples per workload in a public run: one, as the page promises. */
      public: z.literal(1),
      /** Official runs: the least number of baseline/candidate pairs per workload. */
      official: z.number().int().positive(),
      warmup: z.number().int().nonnegative(),
      /** Official runs: the most pairs per workload (adaptive; = official for a fixed count). */
      maxPairs: z.number().int().positive(),
      /** Official runs: add pairs until the pairs' 95 % bootstrap interval is within ± this percent. */
      targetHalfWidthPct: z.number().positive(),
      /**
       * Official runs: the standard deviation, in percent, by which the same engine's paired score
       * moves from one run to the next beyond what its own pairs show (each run's two processes
       * differ slightly for their whole life), measured on this definition's hardware by repeated
       * official runs (`npm run bench:scores`). The reported interval adds it to the bootstrap's in
       * quadrature; more pairs cannot shrink it, so the stopping rule leaves it out. 0: none known.
       */
      runSpreadPct: z.number().nonnegative().max(20).default(0),
      /**
       * The reference engine's samples (warm-ups and timed, in every pairing with it: official,
       * public with K, calibration) stop after this percent of each workload's new tokens, at
       * least 32 steps: the reference is the pairs' clock, steady enough to need fewer steps than
       * the candidate, so it holds the GPU for less. K is calibrated with the same shortened
       * samples, so scores stay in baseline points; changing it changes K (bump rulesVersion).
       * 100: whole samples (harness/README.md, "The reference's shorter clock").
       */
      referenceTokensPct: z.number().gt(0).max(100).default(100),
    })
    .refine((s) => s.maxPairs >= s.official, { message: 'maxPairs must be at least official' }),
  limits: DecodeLimits,
  checks: DecodeChecks,
  dailyLimits: DailyLimits.default({}),
});
export type DecodeBenchmarkDefinition = z.infer<typeof DecodeBenchmarkDefinition>;

/** The task of a dataset or ranked tier: exactly what the harness spec carries. */
export const TrainingTask = TrainingSpecTask;

export const TrainingTier = z.object({
  id: z.string().regex(/^[a-z][a-z0-9-]*$/),
  title: z.string(),
  trainingSeconds: z.number().positive(),
  evalSeconds: z.number().positive(),
  /** Runs per participant per UTC day; accepted runs that fail count, rejected uploads do not. */
  dailyLimit: z.number().int().positive(),
  /** Practice tiers take a dataset; the ranked tier uses its hidden task. */
  ranked: z.boolean(),
  hiddenTask: TrainingTask.optional(),
});

export const TrainingDataset = z.object({
  id: z.string().regex(/^[a-z0-9][a-z0-9-]*$/),
  title: z.string(),
  tiers: z.array(z.string()).min(1),
  task: TrainingTask,
});

export const TrainingBenchmarkDefinition = Common.extend({
  kind: z.literal('training'),
  submission: z.object({
    type: z.literal('file'),
    filename: z.literal('submission.py'),
    maxBytes: z.number().int().positive(),
  }),
  maxModelStateElements: z.number().int().positive(),
  tiers: z.array(TrainingTier).min(1),
  datasets: z.array(TrainingDataset),
});
export type TrainingBenchmarkDefinition = z.infer<typeof TrainingBenchmarkDefinition>;

export const BenchmarkDefinition = z
  .discriminatedUnion('kind', [DecodeBenchmarkDefinition, TrainingBenchmarkDefinition])
  .superRefine((def, ctx) => {
    if (def.kind !== 'training') return;
    const tierIds = new Set(def.tiers.map((t) => t.id));
    def.datasets.forEach((d, i) => {
      for (const t of d.tiers) {
        if (!tierIds.has(t))
          ctx.addIssue({ code: 'custom', path: ['datasets', i, 'tiers'], message: `unknown tier "${t}"` });
      }
    });
    def.tiers.forEach((t, i) => {
      if (t.ranked && !t.hiddenTask)
        ctx.addIssue({
          code: 'custom',
          path: ['tiers', i, 'hiddenTask'],
          message: 'a ranked tier needs its hidden task',
        });
    });
  });
export type BenchmarkDefinition = z.infer<typeof BenchmarkDefinition>;

/**
 * What the benchmark page says about K on one hardware key: "100 = the baseline; calibrated on
 * NVIDIA H200 to ±0.8 %" (the current rules version's pooled calibration).
 */
export const CalibrationSummary = z.object({
  hardware: z.string(),
  halfWidthPct: z.number(),
  pairs: z.number().int(),
  runs: z.number().int(),
});
export type CalibrationSummary = z.infer<typeof CalibrationSummary>;

/** What anyone may read about a benchmark: no hidden workloads, seeds or model paths. */
export const PublicBenchmark = z.object({
  id: z.string(),
  title: z.string(),
  summary: z.string(),
  kind: z.enum(['decode', 'training']),
  ranks: z.enum(['teams', 'users']),
  rulesVersion: z.number().int(),
  submissionsOpen: z.boolean(),
  evaluationsOpen: z.boolean(),
  runTimeLimitSeconds: z.number().int(),
  hardware: z.object({ accelerator: z.enum(['gpu', 'cpu']), gpuModels: z.array(z.string()) }),
  submission: z.object({
    type: z.enum(['archive', 'file']),
    filename: z.string().optional(),
    maxBytes: z.number().optional(),
  }),
  scoring: z.object({ unit: z.string(), description: z.string() }),
  /** The top folder of "Download template" (the starter folder's name). */
  starterFolder: z.string().optional(),
  announcement: z.string().nullable(),
  /** The last rules change (a version bump): when, and the organizer's reason; null before any. */
  rulesChangedAt: z.string().nullable().optional(),
  rulesChangedReason: z.string().nullable().optional(),
  publicWorkloads: z.array(DecodeWorkload).optional(),
  samples: z
    .object({
      public: z.number(),
      official: z.number(),
      warmup: z.number(),
      maxPairs: z.number().optional(),
      targetHalfWidthPct: z.number().optional(),
      runSpreadPct: z.number().optional(),
      referenceTokensPct: z.number().optional(),
    })
    .optional(),
  checks: DecodeChecks.optional(),
  limits: DecodeLimits.optional(),
  /** Decode: the hardware keys whose K is calibrated under the current rules (empty: none yet). */
  calibrations: z.array(CalibrationSummary).optional(),
  /** Decode: runs per team per UTC day by mode; a mode left out has no daily limit. */
  dailyLimits: DailyLimits.optional(),
  /** The verified final board's k and m (null: the definition sets none). */
  finalBoard: FinalBoardSettings.nullable().optional(),
  /** Decode: the pinned checkpoint (never the agents' path to it) and the runtime in words. */
  model: z.object({ checkpoint: z.string().nullable(), revision: z.string().nullable() }).optional(),
  runtime: z.string().nullable().optional(),
  /** Training: the most parameter and persistent-buffer elements a model may hold. */
  maxModelStateElements: z.number().int().optional(),
  tiers: z
    .array(
      z.object({
        id: z.string(),
        title: z.string(),
        trainingSeconds: z.number(),
        evalSeconds: z.number().optional(),
        dailyLimit: z.number(),
        ranked: z.boolean(),
        datasets: z.array(z.object({ id: z.string(), title: z.string() })),
      }),
    )
    .optional(),
});
export type PublicBenchmark = z.infer<typeof PublicBenchmark>;
