import { z } from 'zod';
import { storedText } from './text';
import {
  FailureCode,
  HarnessCheckEvent,
  HarnessMetricEvent,
  ScoreInterval,
  ScoringBasis,
  WorkloadSummary,
} from '../harness/events';

/** REST bodies for submissions, runs, logs, results, ranks and leaderboards. */
export const RunMode = z.enum(['public', 'official']);
export type RunMode = z.infer<typeof RunMode>;
/**
 * What a run is: a team's public or official run, or `baseline`: an organizer's re-measure of the
 * trusted baseline engine alone (no submission, no team, no score; it only writes the cached
 * baseline of one hardware key, POST /api/admin/benchmarks/:id/baselines/remeasure), or
 * `calibration`: an organizer's calibration of K on one hardware key (baseline/reference pairs, no
 * submission, no team, no score; its pairs join that key's pooled K).
 */
export const RunKindMode = z.enum(['public', 'official', 'baseline', 'calibration']);
export type RunKindMode = z.infer<typeof RunKindMode>;
export const RunStatus = z.enum(['queued', 'assigned', 'running', 'succeeded', 'failed', 'canceled']);
export type RunStatus = z.infer<typeof RunStatus>;
export const TERMINAL_STATUSES: RunStatus[] = ['succeeded', 'failed', 'canceled'];

export const RuleVerdictView = z.object({
  rule: z.string(),
  title: z.string(),
  passed: z.boolean(),
  problems: z.array(z.string()),
});

export const SubmissionView = z.object({
  id: z.string(),
  benchmarkId: z.string(),
  teamId: z.string(),
  /** "fast-qwen #7": the source's name and the team's running number for it. */
  name: z.string(),
  source: z.enum(['upload', 'github']),
  sourceName: z.string(),
  number: z.number().int(),
  kind: z.enum(['archive', 'file']),
  sha256: z.string(),
  sizeBytes: z.number().int(),
  fileCount: z.number().int(),
  files: z.array(z.object({ path: z.string(), size: z.number().int() })),
  commitSha: z.string().nullable(),
  createdBy: z.string(),
  createdAt: z.string(),
});
export type SubmissionView = z.infer<typeof SubmissionView>;

/** One file of a submission as GET /api/submissions/:id/code shows it (read only). */
export const SubmissionCodeFile = z.object({
  path: z.string(),
  size: z.number().int(),
  /** What the web highlights it as: from the file's extension. */
  language: z.enum(['python', 'markdown', 'json', 'yaml', 'toml', 'shell', 'text']),
  /** The file's text (UTF-8), or null where it is not shown (omitted says why). */
  text: z.string().nullable(),
  omitted: z.enum(['binary', 'too_large']).nullable(),
});
export type SubmissionCodeFile = z.infer<typeof SubmissionCodeFile>;

export const SubmissionCodeView = z.object({
  submission: SubmissionView,
  files: z.array(SubmissionCodeFile),
  /** True where the reader used the organizer's power (not a member of the team): the read is in the audit log. */
  audited: z.boolean(),
});
export type SubmissionCodeView = z.infer<typeof SubmissionCodeView>;

export const UploadResponse = z.object({ submission: SubmissionView, verdicts: z.array(RuleVerdictView) });
export type UploadResponse = z.infer<typeof UploadResponse>;

export const CreateRunBody = z.object({
  mode: RunMode,
  tier: z.string().optional(),
  dataset: z.string().optional(),
  /** Official runs count: the caller confirms it knows (the web asks, the CLI asks or takes --yes). */
  confirm: z.boolean().optional(),
});
export type CreateRunBody = z.infer<typeof CreateRunBody>;

export const QuotaView = z.object({
  /** "public", "official", or a tier id for benchmarks with tiers. */
  bucket: z.string(),
  limit: z.number().int().nullable(),
  /** Runs of today in this bucket that count (refunded runs do not). */
  used: z.number().int(),
  remaining: z.number().int().nullable(),
  /**
   * Runs of today in this bucket that were refunded: canceled before they started (queued or
   * assigned), or failed `infra_error` / `harness_error`. They do not count in `used`.
   */
  refunded: z.number().int().default(0),
  /** Extra runs an organizer granted for today (already in `limit`). */
  granted: z.number().int().default(0),
  resetsAt: z.string(),
});
export type QuotaView = z.infer<typeof QuotaView>;

/** Why a queued run waits, and for how long it probably will (GET /api/runs/:id, queued runs). */
export const RunWaiting = z.object({
  /** In words, e.g. "No online agent can run deep-recurrence: it needs an NVIDIA H100 or H200; the agents online have: cpu". */
  reason: z.string(),
  /** Online, non-draining agents that can run this benchmark. */
  capableAgents: z.number().int(),
  /** Their slots, and how many of those are running something now. */
  capableSlots: z.number().int(),
  busySlots: z.number().int(),
  /** 1 = next of this benchmark to be dispatched. */
  position: z.number().int(),
  /** Seconds until the run probably starts; null when no agent that could run it is online. */
  etaSeconds: z.number().int().nullable(),
  /** True when the estimate rests on fewer than 3 recent runs of this benchmark (or on none). */
  etaIsGuess: z.boolean(),
  /** The last time an agent that could run this benchmark was seen; null if never. */
  lastCapableSeenAt: z.string().nullable(),
  /** No capable agent seen for the benchmark's noCapableAgentHintSeconds: cancelling is suggested (refunded). */
  suggestCancel: z.boolean(),
});
export type RunWaiting = z.infer<typeof RunWaiting>;

/** The organizer's view of the queue: runs waiting per benchmark and the capacity that could take them. */
export const QueueSummary = z.object({
  benchmarkId: z.string(),
  title: z.string(),
  queued: z.number().int(),
  capableAgents: z.number().int(),
  capableSlots: z.number().int(),
  busySlots: z.number().int(),
  /** Same words as a queued run's waiting reason, for the run first in line. */
  reason: z.string(),
  oldestQueuedAt: z.string().nullable(),
});
export type QueueSummary = z.infer<typeof QueueSummary>;

export const RunView = z.object({
  id: z.string(),
  /** Null for a baseline re-measure (mode `baseline`), which runs no submission. */
  submissionId: z.string().nullable(),
  submissionName: z.string(),
  benchmarkId: z.string(),
  /** Null for a baseline re-measure: it belongs to no team. */
  teamId: z.string().nullable(),
  createdBy: z.string(),
  mode: RunKindMode,
  tier: z.string().nullable(),
  dataset: z.string().nullable(),
  status: RunStatus,
  failureCode: FailureCode.nullable(),
  message: z.string().nullable(),
  cancelReason: z.string().nullable(),
  /** 1 = next to be dispatched; null once assigned. */
  queuePosition: z.number().int().nullable(),
  score: z.number().nullable(),
  rulesVersion: z.number().int(),
  invalidated: z.boolean(),
  invalidatedReason: z.string().nullable(),
  /** An organizer took this result off the leaderboard (reversible); the reason is shown to everyone. */
  disqualifiedAt: z.string().nullable().optional(),
  disqualifiedReason: z.string().nullable().optional(),
  agentName: z.string().nullable(),
  createdAt: z.string(),
  assignedAt: z.string().nullable(),
  startedAt: z.string().nullable(),
  finishedAt: z.string().nullable(),
  /** Whole-run deadline (changes when the organizer changes the limit). */
  deadlineAt: z.string().nullable(),
  lastLogSeq: z.number().int(),
  /**
   * The run row's change counter (every stored change raises it). Snapshots of one run can arrive
   * out of order (a REST read answered after a live status); keep the one with the highest.
   */
  revision: z.number().int().default(0),
  /** The runtime versions of the agent that ran it (GPU agents report them), else null. */
  runtime: z.record(z.string(), z.string()).nullable().default(null),
  /**
   * How that runtime differs from the benchmark's pinned versions, in words ("torch 2.6.0, pinned
   * 2.5.1"); empty when every pin held or nothing was checked.
   */
  runtimeMismatch: z.array(z.string()).default([]),
  /** True when this run does not count against the daily limit (see QuotaView.refunded). */
  quotaRefunded: z.boolean().default(false),
  /** Set while the run is queued: why it waits and an estimate of when it starts. */
  waiting: RunWaiting.nullable().default(null),
  /**
   * An organizer's re-run: the run it repeats (same submission and mode). A re-run never counts
   * against a daily limit and never ranks on the live board; it is shown next to its source.
   */
  rerunOf: z.string().nullable().default(null),
});
export type RunView = z.infer<typeof RunView>;

export const CreateRunResponse = z.object({ run: RunView, quota: QuotaView });
export type CreateRunResponse = z.infer<typeof CreateRunResponse>;

export const CancelRunBody = z.object({
  reason: storedText(z.string().trim().min(1, 'say why (shown in the run history)').max(500)),
});

export const CancelRunResponse = z.object({ run: RunView, changed: z.boolean(), message: z.string() });

export const LogLine = z.object({
  /** 1-based line number within the run: the cursor for `after` and `afterSeq`. */
  seq: z.number().int().positive(),
  ts: z.number(),
  stream: z.enum(['out', 'harness', 'agent', 'system']),
  text: z.string(),
});
export type LogLine = z.infer<typeof LogLine>;

export const LogsPage = z.object({
  items: z.array(LogLine),
  /** Pass as `after` for the next page. */
  nextAfter: z.number().int(),
  /** True when the run is finished and every line has been returned. */
  complete: z.boolean(),
});
export type LogsPage = z.infer<typeof LogsPage>;

export const SampleView = z.object({
  workload: z.string(),
  index: z.number().int(),
  warmup: z.boolean(),
  ttftMs: z.number().nullable(),
  tpotMs: z.number().nullable(),
  tps: z.number().nullable(),
  totalMs: z.number(),
  tokens: z.number().int(),
  metrics: z.record(z.string(), z.number()).optional(),
});
export type SampleView = z.infer<typeof SampleView>;

export const CheckView = HarnessCheckEvent.omit({ type: true });
export type CheckView = z.infer<typeof CheckView>;
export const MetricView = HarnessMetricEvent.omit({ type: true });
export type MetricView = z.infer<typeof MetricView>;

export const RunResultView = z.object({
  run: RunView,
  score: z.number().nullable(),
  /**
   * Official decode scores: the 95 % ranking interval (bootstrap over the pairs, with the run-to-run
   * spread; what separates teams, and what the leaderboard's ≈ marks use); null otherwise.
   */
  interval: ScoreInterval.nullable(),
  /** Official decode scores measured through a calibrated K: the interval with K's folded in; else null. */
  absoluteInterval: ScoreInterval.nullable().optional(),
  /** Decode scores: what was measured against (reference through K, or the baseline), in words in `note`. */
  scoring: ScoringBasis.nullable().optional(),
  /** Official decode runs: baseline/candidate pairs measured per workload; null otherwise. */
  pairs: z.number().int().nullable(),
  /** True for a public decode score: one sample per workload, feedback only (`scoring` says what it was measured against). */
  indicative: z.boolean(),
  workloads: z.array(WorkloadSummary),
  samples: z.array(SampleView),
  checks: z.array(CheckView),
  metrics: z.record(z.string(), z.number()),
  detail: z.string().nullable(),
  complete: z.boolean(),
  /** Training runs: the loss curve and other progress metrics, in order. */
  curve: z.array(HarnessMetricEvent.omit({ type: true })).optional(),
});
export type RunResultView = z.infer<typeof RunResultView>;

export const LeaderboardEntry = z.object({
  rank: z.number().int().positive(),
  /** Team name, or the participant's login for benchmarks that rank users. */
  name: z.string(),
  teamSlug: z.string().nullable(),
  userLogin: z.string().nullable(),
  score: z.number(),
  /** The score's 95 % interval where the run measured one (decode official runs); else null. */
  interval: ScoreInterval.nullable(),
  pairs: z.number().int().nullable(),
  /**
   * Whether this entry's interval overlaps the one above / below it: those places are not
   * statistically apart. False where either has no interval.
   */
  overlapsPrevious: z.boolean(),
  overlapsNext: z.boolean(),
  runId: z.string(),
  achievedAt: z.string(),
});
export type LeaderboardEntry = z.infer<typeof LeaderboardEntry>;

/**
 * The final board only: how a place was verified (the entry with this `runId`, the holder's best
 * run). That entry's `score` is the median of the re-runs' scores and its `interval` the median
 * run's; `sourceScore` is the best run's own. Holders below the verified top k have none: their
 * live score stands, unverified.
 */
export const FinalVerification = z.object({
  runId: z.string(),
  reruns: z.number().int(),
  succeeded: z.number().int(),
  scores: z.array(z.number()),
  sourceScore: z.number(),
  sourceInterval: ScoreInterval.nullable(),
  /** False when the median falls outside the best run's own interval (flagged for the organizer). */
  reproduced: z.boolean().nullable(),
});
export type FinalVerification = z.infer<typeof FinalVerification>;

export const LeaderboardView = z.object({
  benchmarkId: z.string(),
  rulesVersion: z.number().int(),
  ranks: z.enum(['teams', 'users']),
  entries: z.array(LeaderboardEntry),
  updatedAt: z.string(),
  /** Which board this is: `live` (each holder's best as it stands) or the organizer's published `final` one. */
  board: z.enum(['live', 'final']).default('live'),
  /** When the organizer published the benchmark's verified final board (null: none yet). */
  finalPublishedAt: z.string().nullable().default(null),
  /** The final board only: the verified places (FinalVerification); left out on the live board. */
  verifications: z.array(FinalVerification).optional(),
});
export type LeaderboardView = z.infer<typeof LeaderboardView>;

export const RankView = z.object({
  runId: z.string(),
  benchmarkId: z.string(),
  mode: RunKindMode,
  status: RunStatus,
  score: z.number().nullable(),
  interval: ScoreInterval.nullable(),
  pairs: z.number().int().nullable(),
  /** Where this run's score would place now (null when it cannot rank). */
  rank: z.number().int().nullable(),
  /** Whether this run is the holder's current best on the board. */
  isBest: z.boolean(),
  eligible: z.boolean(),
  reason: z.string(),
  entries: z.number().int(),
});
export type RankView = z.infer<typeof RankView>;

export const TeamPageView = z.object({
  team: z.object({ name: z.string(), slug: z.string(), createdAt: z.string() }),
  members: z.array(
    z.object({ login: z.string(), name: z.string().nullable(), avatarUrl: z.string().nullable() }),
  ),
  /** Every result that raised the team's best, per benchmark, oldest first. */
  history: z.array(
    z.object({
      benchmarkId: z.string(),
      score: z.number(),
      runId: z.string(),
      achievedAt: z.string(),
      rulesVersion: z.number().int(),
    }),
  ),
  /** Results an organizer disqualified, with the reason (they no longer count). */
  disqualified: z
    .array(
      z.object({
        benchmarkId: z.string(),
        score: z.number().nullable(),
        runId: z.string(),
        reason: z.string(),
        disqualifiedAt: z.string(),
      }),
    )
    .optional(),
  /**
   * The team's places on the live boards (`rank`, `score`), and where the benchmark's verified
   * final board is published, its place there (`final`; null where it is not on it).
   */
  places: z.array(
    z.object({
      benchmarkId: z.string(),
      rank: z.number().int(),
      score: z.number(),
      final: z
        .object({ rank: z.number().int(), score: z.number(), publishedAt: z.string() })
        .nullable()
        .optional(),
    }),
  ),
});
export type TeamPageView = z.infer<typeof TeamPageView>;

export const Paginated = <T extends z.ZodTypeAny>(item: T) =>
  z.object({ items: z.array(item), nextCursor: z.string().nullable() });
