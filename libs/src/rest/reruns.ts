import { z } from 'zod';
import { ScoreInterval } from '../harness/events';
import { Reason } from './organizer';
import { LeaderboardView, RunStatus } from './runs';

/** REST bodies and views of the organizer's re-runs and the verified final board (docs/API.md). */

/** POST /api/admin/runs/:id/rerun. */
export const RerunBody = z
  .object({
    reason: Reason,
    /**
     * Official runs: replay the source run's stored hidden prompts (its nonce) instead of drawing
     * fresh ones, for an audit of that very measurement.
     */
    replayPrompts: z.boolean().default(false),
  })
  .strict();
export type RerunBody = z.infer<typeof RerunBody>;

/** POST /api/admin/benchmarks/:id/reruns and POST /api/admin/benchmarks/:id/final-board. */
export const RerunBestBody = z.object({ reason: Reason }).strict();
export type RerunBestBody = z.infer<typeof RerunBestBody>;

export const RerunBatchKind = z.enum(['single', 'bulk', 'final']);

/** One re-run next to the run it repeats. */
export const RerunPairView = z.object({
  sourceRunId: z.string(),
  rerunId: z.string(),
  teamName: z.string(),
  teamSlug: z.string(),
  sourceScore: z.number().nullable(),
  sourceInterval: ScoreInterval.nullable(),
  status: RunStatus,
  score: z.number().nullable(),
  interval: ScoreInterval.nullable(),
});
export type RerunPairView = z.infer<typeof RerunPairView>;

export const RerunBatchView = z.object({
  id: z.string(),
  benchmarkId: z.string(),
  kind: RerunBatchKind,
  reason: z.string(),
  createdBy: z.string(),
  createdAt: z.string(),
  rulesVersion: z.number().int(),
  replayPrompts: z.boolean(),
  /** Final boards: how many holders and how many re-runs each. */
  topK: z.number().int().nullable(),
  rerunsPerRun: z.number().int().nullable(),
  counts: z.object({
    queued: z.number().int(),
    running: z.number().int(),
    succeeded: z.number().int(),
    failed: z.number().int(),
    canceled: z.number().int(),
  }),
  /** Every re-run finished. */
  done: z.boolean(),
  pairs: z.array(RerunPairView),
});
export type RerunBatchView = z.infer<typeof RerunBatchView>;

/** POST /api/admin/runs/:id/rerun answers the batch (one pair) and the new run's id. */
export const RerunResponse = z.object({ runId: z.string(), batch: RerunBatchView });

/** A best run the re-runs did not reproduce: the median outside the original run's interval. */
export const FinalBoardFlag = z.object({
  name: z.string(),
  sourceRunId: z.string(),
  sourceScore: z.number(),
  sourceInterval: ScoreInterval.nullable(),
  median: z.number().nullable(),
  message: z.string(),
});
export type FinalBoardFlag = z.infer<typeof FinalBoardFlag>;

/** GET /api/admin/benchmarks/:id/final-board: the draft (or the published board) with its re-runs. */
export const FinalBoardAdminView = z.object({
  batch: RerunBatchView,
  /** The board as it would be published (or was). */
  board: LeaderboardView,
  flags: z.array(FinalBoardFlag),
  publishedAt: z.string().nullable(),
  publishedBy: z.string().nullable(),
});
export type FinalBoardAdminView = z.infer<typeof FinalBoardAdminView>;
