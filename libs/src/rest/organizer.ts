import { z } from 'zod';
import { FailureCode } from '../harness/events';
import { RunStatus, RunView } from './runs';

/** REST bodies of the organizer's console: audit log, bans, disqualifications, all-runs view, export. */

/** Why an organizer did something; recorded in the audit log and shown where it applies. */
const Reason = z
  .string()
  .trim()
  .min(3, 'say why in a few words (at least 3 characters); it is recorded in the audit log')
  .max(1000, 'at most 1000 characters');

export const AuditAction = z.enum([
  'benchmark.open_submissions',
  'benchmark.close_submissions',
  'benchmark.open_evaluations',
  'benchmark.close_evaluations',
  'benchmark.run_time_limit',
  'benchmark.announcement',
  'benchmark.rules_bump',
  'baseline.remeasure',
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
]);
export type AuditAction = z.infer<typeof AuditAction>;

export const AuditEntryView = z.object({
  id: z.string(),
  at: z.string(),
  actor: z.object({ id: z.string(), login: z.string() }),
  action: AuditAction,
  /** What it was done to: a benchmark id, an agent, a ban, a run. */
  target: z.object({ kind: z.enum(['benchmark', 'agent', 'ban', 'run', 'schedule']), id: z.string() }),
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
    user: z.string().trim().min(1).optional(),
    team: z.string().trim().min(1).optional(),
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

/** The fewest and the most timed baseline samples per workload an organizer's re-measure may ask for. */
export const REMEASURE_MIN_SAMPLES = 10;
export const REMEASURE_MAX_SAMPLES = 50;

/**
 * POST /api/admin/benchmarks/:id/baselines/remeasure: queue a measurement of the trusted baseline
 * engine alone on one hardware key (a GPU model name as the agents report it, or "cpu"); when it
 * succeeds the hub's cached baseline for that key is replaced by its medians.
 */
export const BaselineRemeasureBody = z
  .object({
    /** The hardware key; may be left out when the agents that can run the benchmark have one. */
    hardware: z.string().trim().min(1).max(200).optional(),
    samples: z.coerce
      .number()
      .int()
      .min(REMEASURE_MIN_SAMPLES, `at least ${REMEASURE_MIN_SAMPLES} timed samples per workload`)
      .max(REMEASURE_MAX_SAMPLES, `at most ${REMEASURE_MAX_SAMPLES} timed samples per workload`)
      .default(REMEASURE_MIN_SAMPLES),
    reason: Reason,
  })
  .strict();
export type BaselineRemeasureBody = z.infer<typeof BaselineRemeasureBody>;

/** One baseline re-measure (a run of mode `baseline`) as the organizer's console shows it. */
export const BaselineRemeasureView = z.object({
  runId: z.string(),
  hardware: z.string(),
  samples: z.number().int(),
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

/** GET /api/admin/benchmarks/:id/baselines: the cached baselines and the latest re-measures. */
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
  remeasures: z.array(BaselineRemeasureView),
});
export type BaselinesView = z.infer<typeof BaselinesView>;

export const AdminRunView = RunView.extend({
  teamName: z.string(),
  teamSlug: z.string(),
  submissionSha256: z.string(),
});
export type AdminRunView = z.infer<typeof AdminRunView>;

export const AdminRunsQuery = z
  .object({
    benchmark: z.string().optional(),
    status: RunStatus.optional(),
    failureCode: FailureCode.optional(),
    /** A team slug. */
    team: z.string().optional(),
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
    name: z.string().trim().min(1, 'name the round, e.g. "Round 1"').max(80),
    startsAt: z.string().datetime({ offset: true, message: 'an ISO 8601 time such as 2026-12-01T00:00:00Z' }),
    endsAt: z.string().datetime({ offset: true, message: 'an ISO 8601 time such as 2026-12-15T00:00:00Z' }),
    reason: z.string().trim().max(1000).optional(),
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
    reason: z.string().trim().max(1000).optional(),
  })
  .strict();
export type ScheduleBody = z.infer<typeof ScheduleBody>;

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
export const WebhookEvent = z.enum(['run.finished']);
export type WebhookEvent = z.infer<typeof WebhookEvent>;

export const CreateWebhookBody = z
  .object({
    url: z
      .string()
      .url('a full URL such as https://ci.example.com/dryft')
      .refine((u) => /^https?:\/\//i.test(u), 'an http:// or https:// URL'),
    events: z.array(WebhookEvent).min(1).default(['run.finished']),
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
