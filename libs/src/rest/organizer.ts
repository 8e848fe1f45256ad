import { z } from 'zod';
import { storedText } from './text';
import { FailureCode } from '../harness/events';
import { RunStatus, RunView } from './runs';

/** REST bodies of the organizer's console: audit log, bans, disqualifications, all-runs view, export. */

/** Why an organizer did something; recorded in the audit log and shown where it applies. */
export const Reason = storedText(
  z
    .string()
    .trim()
    .min(3, 'say why in a few words (at least 3 characters); it is recorded in the audit log')
    .max(1000, 'at most 1000 characters'),
);

export const AuditAction = z.enum([
  'benchmark.open_submissions',
  'benchmark.close_submissions',
  'benchmark.open_evaluations',
  'benchmark.close_evaluations',
  'benchmark.run_time_limit',
  'benchmark.announcement',
  'benchmark.rules_bump',
  'baseline.remeasure',
  'baseline.calibrate',
  'agent.create',
  'agent.drain',
  'agent.revoke',
  'ban.create',
  'ban.lift',
  'run.disqualify',
  'run.requalify',
  'round.set',
  'round.clear',
  'schedule.create',
  'schedule.cancel',
  'schedule.move',
  /** An organizer read a team's submitted code (the files in the browser, or the archive itself). */
  'submission.view_code',
  'submission.download',
  /** Extra runs of a daily limit for a team or user on a day; a run given back to its daily limit. */
  'quota.grant',
  'run.refund',
  /** A re-run of one run; every eligible best run of a benchmark again; the verified final board. */
  'run.rerun',
  'benchmark.rerun_best',
  'final_board.start',
  'final_board.publish',
  /** Not an organizer's action: a user locked out of joining by code after too many attempts (rate limits). */
  'team.join_locked',
]);
export type AuditAction = z.infer<typeof AuditAction>;

export const AuditEntryView = z.object({
  id: z.string(),
  at: z.string(),
  actor: z.object({ id: z.string(), login: z.string() }),
  action: AuditAction,
  /** What it was done to: a benchmark id, an agent, a ban, a run. */
  target: z.object({
    kind: z.enum(['benchmark', 'agent', 'ban', 'run', 'schedule', 'user', 'submission', 'team']),
    id: z.string(),
  }),
  benchmarkId: z.string().nullable(),
  reason: z.string().nullable(),
  /** The values set (before → after where it applies). */
  details: z.record(z.string(), z.unknown()),
});
export type AuditEntryView = z.infer<typeof AuditEntryView>;

export const BanSubject = z.discriminatedUnion('kind', [
  z.object({ kind: z.literal('user'), login: z.string() }),
  z.object({ kind: z.literal('team'), slug: z.string(), name: z.string().optional() }),
]);
export type BanSubject = z.infer<typeof BanSubject>;

export const CreateBanBody = z
  .object({
    /** Exactly one of user (a GitHub login) or team (a team slug). */
    user: storedText(z.string().trim().min(1)).optional(),
    team: storedText(z.string().trim().min(1)).optional(),
    /** A benchmark id, or omit (or null) for a hub-wide ban. */
    benchmarkId: z.string().min(1).nullable().optional(),
    reason: Reason,
    /** When the ban ends (ISO 8601, in the future); omit for a ban without end. */
    endsAt: z
      .string()
      .datetime({ offset: true, message: 'an ISO 8601 time such as 2026-12-01T00:00:00Z' })
      .optional(),
  })
  .strict()
  .refine((b) => (b.user === undefined) !== (b.team === undefined), {
    message: 'send exactly one of "user" (a login) or "team" (a team slug)',
  });
export type CreateBanBody = z.infer<typeof CreateBanBody>;

export const LiftBody = z.object({ reason: Reason }).strict();

export const BanView = z.object({
  id: z.string(),
  subject: BanSubject,
  /** null: every benchmark on the hub. */
  benchmarkId: z.string().nullable(),
  reason: z.string(),
  endsAt: z.string().nullable(),
  createdAt: z.string(),
  createdBy: z.string(),
  liftedAt: z.string().nullable(),
  liftedBy: z.string().nullable(),
  liftReason: z.string().nullable(),
  /** In force now: not lifted and not past its end. */
  active: z.boolean(),
});
export type BanView = z.infer<typeof BanView>;

/** What a banned participant sees about their own bans. */
export const MyBanView = z.object({
  subject: BanSubject,
  benchmarkId: z.string().nullable(),
  reason: z.string(),
  endsAt: z.string().nullable(),
});
export type MyBanView = z.infer<typeof MyBanView>;

export const DisqualifyBody = z.object({ reason: Reason }).strict();

/** POST /api/admin/runs/:id/refund: the run stops counting against its holder's daily limit. */
export const RefundRunBody = z.object({ reason: Reason }).strict();
export type RefundRunBody = z.infer<typeof RefundRunBody>;

/**
 * POST /api/admin/benchmarks/:id/quota-grants: extra runs of one daily-limit bucket for a team (by
 * slug) or a user (by login: benchmarks that rank users), on one UTC day (default today).
 */
export const QuotaGrantBody = z
  .object({
    team: z.string().trim().min(1).optional(),
    user: z.string().trim().min(1).optional(),
    bucket: z.string().trim().min(1, 'name the daily limit: "official", "public" or a tier id'),
    extraRuns: z.number().int().min(1, 'grant at least 1 run').max(100, 'at most 100 extra runs at once'),
    day: z
      .string()
      .regex(/^\d{4}-\d{2}-\d{2}$/, 'a UTC day as YYYY-MM-DD')
      .optional(),
    reason: Reason,
  })
  .strict()
  .refine((b) => (b.team === undefined) !== (b.user === undefined), {
    message: 'name exactly one of "team" (its slug) or "user" (a GitHub login)',
  });
export type QuotaGrantBody = z.infer<typeof QuotaGrantBody>;

export const QuotaGrantView = z.object({
  id: z.string(),
  benchmarkId: z.string(),
  holder: z.object({ kind: z.enum(['team', 'user']), id: z.string(), name: z.string() }),
  bucket: z.string(),
  day: z.string(),
  extraRuns: z.number().int(),
  reason: z.string(),
  grantedBy: z.string(),
  createdAt: z.string(),
});
export type QuotaGrantView = z.infer<typeof QuotaGrantView>;

/** The fewest and the most timed baseline samples per workload an organizer's re-measure may ask for. */
export const REMEASURE_MIN_SAMPLES = 10;
export const REMEASURE_MAX_SAMPLES = 50;

/** Bounds of a calibration request (POST …/baselines/remeasure with mode "calibration"). */
export const CALIBRATION_MIN_BUDGET_SECONDS = 30;
export const CALIBRATION_MAX_BUDGET_SECONDS = 4 * 3600;
export const CALIBRATION_MIN_TARGET_PCT = 0.1;
export const CALIBRATION_MAX_TARGET_PCT = 10;
export const CALIBRATION_MAX_PARTS = 16;
/** The fewest pairs per workload a calibration run must bring for its ratios to be pooled. */
export const CALIBRATION_MIN_PAIRS = 4;

/**
 * POST /api/admin/benchmarks/:id/baselines/remeasure: queue, on one hardware key (a GPU model name
 * as the agents report it, or "cpu"), either (mode `baseline`, the default) a measurement of the
 * trusted baseline engine alone, whose medians replace the cached baseline of that key when it
 * succeeds; or (mode `calibration`) `parts` calibration runs of K (baseline/reference pairs), each
 * spending at most `budgetSeconds`, whose pairs join the key's pooled K when they succeed.
 */
export const BaselineRemeasureBody = z
  .object({
    mode: z.enum(['baseline', 'calibration']).default('baseline'),
    /** The hardware key; may be left out when the agents that can run the benchmark have one. */
    hardware: storedText(z.string().trim().min(1).max(200)).optional(),
    /** Baseline re-measures: timed samples per workload (default REMEASURE_MIN_SAMPLES). */
    samples: z.coerce
      .number()
      .int()
      .min(REMEASURE_MIN_SAMPLES, `at least ${REMEASURE_MIN_SAMPLES} timed samples per workload`)
      .max(REMEASURE_MAX_SAMPLES, `at most ${REMEASURE_MAX_SAMPLES} timed samples per workload`)
      .optional(),
    /** Calibration: the GPU seconds each part may spend on pairs (default: the definition's). */
    budgetSeconds: z.coerce.number().optional(),
    /** Calibration: stop once K's half-width is within ± this percent (default: the definition's). */
    targetHalfWidthPct: z.coerce.number().optional(),
    /** Calibration: how many runs to queue; each may go to a different agent of the key (default 1). */
    parts: z.coerce.number().optional(),
    reason: Reason,
  })
  .strict();
export type BaselineRemeasureBody = z.infer<typeof BaselineRemeasureBody>;

/** One baseline re-measure or calibration run (mode `baseline` / `calibration`) as the console shows it. */
export const BaselineRemeasureView = z.object({
  runId: z.string(),
  mode: z.enum(['baseline', 'calibration']).default('baseline'),
  hardware: z.string(),
  /** Baseline re-measures: timed samples per workload; calibration runs: 0. */
  samples: z.number().int(),
  /** Calibration runs: part n of the request, and what the run was asked to spend. */
  part: z.number().int().nullable().optional(),
  calibrate: z
    .object({ targetHalfWidthPct: z.number(), maxPairs: z.number().int(), budgetSeconds: z.number() })
    .nullable()
    .optional(),
  rulesVersion: z.number().int(),
  status: RunStatus,
  failureCode: FailureCode.nullable(),
  message: z.string().nullable(),
  agentName: z.string().nullable(),
  requestedBy: z.string(),
  createdAt: z.string(),
  finishedAt: z.string().nullable(),
});
export type BaselineRemeasureView = z.infer<typeof BaselineRemeasureView>;

/** One calibration run's contribution to a pooled K (stored when it succeeded and passed the checks). */
export const CalibrationRunView = z.object({
  runId: z.string(),
  agentName: z.string().nullable(),
  pairs: z.number().int(),
  seconds: z.number(),
  /** The run's own K half-width, as its harness reported it. */
  halfWidthPct: z.number(),
  /** Per workload: the median of this run's ratios, and its pairs. */
  workloads: z.record(z.string(), z.object({ k: z.number(), pairs: z.number().int() })),
  createdAt: z.string(),
});
export type CalibrationRunView = z.infer<typeof CalibrationRunView>;

/** A hardware key's pooled K under one rules version, with its history (GET …/baselines). */
export const CalibrationView = z.object({
  hardware: z.string(),
  rulesVersion: z.number().int(),
  halfWidthPct: z.number(),
  /** The fewest pooled pairs of any workload. */
  pairs: z.number().int(),
  runs: z.number().int(),
  /** GPU minutes the pooled calibration runs spent on their pairs. */
  gpuMinutes: z.number(),
  workloads: z.record(
    z.string(),
    z.object({
      k: z.number(),
      low: z.number(),
      high: z.number(),
      halfWidthPct: z.number(),
      pairs: z.number().int(),
    }),
  ),
  history: z.array(CalibrationRunView),
  updatedAt: z.string(),
});
export type CalibrationView = z.infer<typeof CalibrationView>;

/** GET /api/admin/benchmarks/:id/baselines: the cached baselines, the pooled K's and the latest re-measures. */
export const BaselinesView = z.object({
  benchmarkId: z.string(),
  rulesVersion: z.number().int(),
  cached: z.array(
    z.object({
      hardware: z.string(),
      rulesVersion: z.number().int(),
      measuredAt: z.string(),
      workloads: z.record(
        z.string(),
        z.object({ totalMs: z.number(), ttftMs: z.number(), tpotMs: z.number() }),
      ),
    }),
  ),
  /** The definition's reference engine (null: no calibration possible, official runs pair with the baseline). */
  referenceEngine: z.string().nullable().optional(),
  /** The definition's calibration defaults. */
  calibrationDefaults: z
    .object({ targetHalfWidthPct: z.number(), maxPairs: z.number().int(), budgetSeconds: z.number() })
    .nullable()
    .optional(),
  /** Pooled K per hardware key and rules version, newest rules first. */
  calibrations: z.array(CalibrationView).default([]),
  remeasures: z.array(BaselineRemeasureView),
});
export type BaselinesView = z.infer<typeof BaselinesView>;

export const AdminRunView = RunView.extend({
  teamName: z.string(),
  teamSlug: z.string(),
  submissionSha256: z.string(),
  /**
   * Official decode runs: the secret nonce the harness mixed into the hidden prompts (organizers
   * only, for an audit re-run; never in a participant's run view, result or log).
   */
  promptNonce: z.string().nullable().default(null),
});
export type AdminRunView = z.infer<typeof AdminRunView>;

export const AdminRunsQuery = z
  .object({
    benchmark: storedText(z.string()).optional(),
    status: RunStatus.optional(),
    failureCode: FailureCode.optional(),
    /** A team slug. */
    team: storedText(z.string()).optional(),
    /** Created at or after / before (ISO 8601). */
    since: z.string().datetime({ offset: true }).optional(),
    until: z.string().datetime({ offset: true }).optional(),
    /** A run id or a submission id (full UUID). */
    q: z.string().uuid('a run id or a submission id (a full UUID)').optional(),
    cursor: z.string().optional(),
    limit: z.coerce.number().int().min(1).max(200).default(50),
  })
  .strict();
export type AdminRunsQuery = z.infer<typeof AdminRunsQuery>;

export const ExportQuery = z
  .object({
    format: z.enum(['json', 'csv']).default('json'),
    /** The leaderboard (each holder's best) or every official result under the current rules. */
    what: z.enum(['leaderboard', 'results']).default('results'),
  })
  .strict();

export const ExportRow = z.object({
  rank: z.number().int().nullable(),
  team: z.string(),
  teamSlug: z.string(),
  members: z.array(z.string()),
  submittedBy: z.string(),
  score: z.number(),
  /** 95 % interval of the score, when the hub measured one. */
  intervalLow: z.number().nullable().optional(),
  intervalHigh: z.number().nullable().optional(),
  runId: z.string(),
  submissionId: z.string(),
  submissionSha256: z.string(),
  rulesVersion: z.number().int(),
  tier: z.string().nullable(),
  finishedAt: z.string(),
  disqualified: z.boolean(),
  disqualifiedReason: z.string().nullable(),
});
export type ExportRow = z.infer<typeof ExportRow>;

/** The displayed round of a benchmark. It never opens or closes anything by itself. */
export const RoundView = z.object({ name: z.string(), startsAt: z.string(), endsAt: z.string() });
export type RoundView = z.infer<typeof RoundView>;

export const SetRoundBody = z
  .object({
    name: storedText(z.string().trim().min(1, 'name the round, e.g. "Round 1"').max(80)),
    startsAt: z.string().datetime({ offset: true, message: 'an ISO 8601 time such as 2026-12-01T00:00:00Z' }),
    endsAt: z.string().datetime({ offset: true, message: 'an ISO 8601 time such as 2026-12-15T00:00:00Z' }),
    reason: storedText(z.string().trim().max(1000)).optional(),
  })
  .strict()
  .refine((b) => new Date(b.endsAt) > new Date(b.startsAt), {
    message: 'endsAt must be after startsAt',
    path: ['endsAt'],
  });
export type SetRoundBody = z.infer<typeof SetRoundBody>;

export const ScheduleBody = z
  .object({
    action: z.enum(['open', 'close']),
    /** What opens or closes: submissions, evaluations, or both (default). */
    target: z.enum(['submissions', 'evaluations', 'both']).default('both'),
    at: z.string().datetime({ offset: true, message: 'an ISO 8601 time such as 2026-12-01T00:00:00Z' }),
    reason: storedText(z.string().trim().max(1000)).optional(),
  })
  .strict();
export type ScheduleBody = z.infer<typeof ScheduleBody>;

/** Moves a pending scheduled action to another time (a close moved is announced to the teams again). */
export const MoveScheduleBody = z
  .object({
    at: z.string().datetime({ offset: true, message: 'an ISO 8601 time such as 2026-12-01T00:00:00Z' }),
    reason: storedText(z.string().trim().max(1000)).optional(),
  })
  .strict();
export type MoveScheduleBody = z.infer<typeof MoveScheduleBody>;

export const ScheduledActionView = z.object({
  id: z.string(),
  benchmarkId: z.string(),
  action: z.enum(['open', 'close']),
  target: z.enum(['submissions', 'evaluations', 'both']),
  at: z.string(),
  reason: z.string().nullable(),
  createdBy: z.string(),
  status: z.enum(['pending', 'running', 'done', 'canceled', 'failed']),
  finishedAt: z.string().nullable(),
  outcome: z.string().nullable(),
  /** A close: when every team was told it is near (`round.closing`); null while not yet. */
  noticeSentAt: z.string().nullable(),
});
export type ScheduledActionView = z.infer<typeof ScheduledActionView>;

/** Everything a countdown needs: the round, what is open now, and the opens/closes scheduled. */
export const BenchmarkClockView = z.object({
  benchmarkId: z.string(),
  round: RoundView.nullable(),
  submissionsOpen: z.boolean(),
  evaluationsOpen: z.boolean(),
  /** Pending scheduled actions, soonest first. */
  scheduled: z.array(ScheduledActionView),
  serverTime: z.string(),
});
export type BenchmarkClockView = z.infer<typeof BenchmarkClockView>;

/** Outgoing team webhooks: events the hub posts to a team's URL, signed like GitHub's. */
export const WebhookEvent = z.enum(['run.finished', 'round.closing', 'final_board.published']);
export type WebhookEvent = z.infer<typeof WebhookEvent>;

export const CreateWebhookBody = z
  .object({
    url: z
      .string()
      .url('a full URL such as https://ci.example.com/dryft')
      .refine((u) => /^https?:\/\//i.test(u), 'an http:// or https:// URL'),
    /** Omitted: `run.finished` only (what every webhook received before the notices existed). */
    events: z
      .array(WebhookEvent, {
        error: 'a list of events: run.finished, round.closing, final_board.published',
      })
      .min(1, 'at least one event (or leave events out for run.finished only)')
      .default(['run.finished']),
  })
  .strict();
export type CreateWebhookBody = z.infer<typeof CreateWebhookBody>;

export const WebhookView = z.object({
  id: z.string(),
  teamId: z.string(),
  url: z.string(),
  events: z.array(WebhookEvent),
  createdBy: z.string(),
  createdAt: z.string(),
});
export type WebhookView = z.infer<typeof WebhookView>;

/** The only response that contains the signing secret. */
export const CreatedWebhookView = WebhookView.extend({ secret: z.string() });

export const WebhookDeliveryView = z.object({
  id: z.string(),
  webhookId: z.string(),
  event: WebhookEvent,
  runId: z.string().nullable(),
  status: z.enum(['pending', 'succeeded', 'failed']),
  attempts: z.number().int(),
  lastStatusCode: z.number().int().nullable(),
  lastError: z.string().nullable(),
  createdAt: z.string(),
  deliveredAt: z.string().nullable(),
});
export type WebhookDeliveryView = z.infer<typeof WebhookDeliveryView>;

/** The body the hub posts for `run.finished` (header X-Dryft-Event: run.finished). */
export const RunFinishedPayload = z.object({
  event: z.literal('run.finished'),
  deliveryId: z.string(),
  sentAt: z.string(),
  team: z.object({ id: z.string(), slug: z.string(), name: z.string() }),
  run: RunView,
});
export type RunFinishedPayload = z.infer<typeof RunFinishedPayload>;

const WebhookTeam = z.object({ id: z.string(), slug: z.string(), name: z.string() });
const WebhookBenchmark = z.object({ id: z.string(), title: z.string() });

/**
 * `round.closing` (X-Dryft-Event: round.closing): a scheduled close of a benchmark the team submitted
 * to is near. Once per scheduled close; again only if the organizer moves it.
 */
export const RoundClosingPayload = z.object({
  event: z.literal('round.closing'),
  deliveryId: z.string(),
  sentAt: z.string(),
  team: WebhookTeam,
  benchmark: WebhookBenchmark,
  scheduleId: z.string(),
  target: z.enum(['submissions', 'evaluations', 'both']),
  closesAt: z.string(),
  minutesLeft: z.number().int().nonnegative(),
});
export type RoundClosingPayload = z.infer<typeof RoundClosingPayload>;

/** `final_board.published`: the verified final board of a benchmark the team submitted to is out. */
export const FinalBoardPublishedPayload = z.object({
  event: z.literal('final_board.published'),
  deliveryId: z.string(),
  sentAt: z.string(),
  team: WebhookTeam,
  benchmark: WebhookBenchmark,
  publishedAt: z.string(),
  url: z.string(),
});
export type FinalBoardPublishedPayload = z.infer<typeof FinalBoardPublishedPayload>;
