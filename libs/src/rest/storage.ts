import { z } from 'zod';

/** What one team stores on the hub (`GET /api/admin/storage`, organizers only). */
export const TeamStorageView = z.object({
  teamId: z.string(),
  name: z.string(),
  slug: z.string(),
  runs: z.number().int(),
  /** Log lines and UTF-8 bytes of log text stored for its runs (capped per run). */
  logLines: z.number().int(),
  logBytes: z.number().int(),
  submissions: z.number().int(),
  /** Bytes of its uploaded archives and files (as uploaded; identical uploads are stored once). */
  artifactBytes: z.number().int(),
  totalBytes: z.number().int(),
  /** Submissions stored today (UTC), against the hub's TEAM_UPLOADS_PER_DAY. */
  uploadsToday: z.number().int(),
  /** Runs waiting in the queue now, against TEAM_QUEUED_RUNS. */
  queuedRuns: z.number().int(),
});
export type TeamStorageView = z.infer<typeof TeamStorageView>;

export const StorageView = z.object({
  teams: z.array(TeamStorageView),
  totals: z.object({
    logBytes: z.number().int(),
    artifactBytes: z.number().int(),
    logLines: z.number().int(),
  }),
  /** The per-team quotas this hub enforces (its settings), for the table's "of" columns. */
  limits: z.object({
    uploadsPerDay: z.number().int(),
    /** `artifactBytes` of a team may not pass this. */
    storageLimitBytes: z.number().int(),
    /** Public decode runs a day where the benchmark's definition sets no `dailyLimits.public`. */
    publicRunsPerDay: z.number().int(),
    queuedRuns: z.number().int(),
    /** When today's upload counts start again (the next UTC midnight). */
    resetsAt: z.string(),
  }),
});
export type StorageView = z.infer<typeof StorageView>;

/** A team's submissions against its quotas (what a refused upload was measured on). */
export const SubmissionUsage = z.object({
  uploadsToday: z.number().int(),
  uploadsPerDay: z.number().int(),
  uploadsResetAt: z.string(),
  storedBytes: z.number().int(),
  storageLimitBytes: z.number().int(),
});
export type SubmissionUsage = z.infer<typeof SubmissionUsage>;
