import { z } from 'zod';

/**
 * Notices the hub sends every `/live` socket about a benchmark (`benchmark.notice`), the same news a
 * team's webhooks receive. `round.closing`: a scheduled close is near (ROUND_CLOSING_NOTICE_MINUTES
 * before it, or at once when it was scheduled sooner); sent once per scheduled close, again only if
 * the organizer moves it. `final_board.published`: the organizer published the verified final board.
 */
export const RoundClosingNotice = z.object({
  kind: z.literal('round.closing'),
  benchmarkId: z.string(),
  benchmarkTitle: z.string(),
  /** The scheduled close this notice is for (GET /api/benchmarks/:id/clock lists it while pending). */
  scheduleId: z.string(),
  /** What closes: new uploads (`submissions`), new runs (`evaluations`), or both. */
  target: z.enum(['submissions', 'evaluations', 'both']),
  closesAt: z.string(),
  /** Whole minutes left when the notice was sent, rounded up. */
  minutesLeft: z.number().int().nonnegative(),
  sentAt: z.string(),
});
export type RoundClosingNotice = z.infer<typeof RoundClosingNotice>;

export const FinalBoardPublishedNotice = z.object({
  kind: z.literal('final_board.published'),
  benchmarkId: z.string(),
  benchmarkTitle: z.string(),
  publishedAt: z.string(),
  /** The web page of the final board. */
  url: z.string(),
  sentAt: z.string(),
});
export type FinalBoardPublishedNotice = z.infer<typeof FinalBoardPublishedNotice>;

export const BenchmarkNotice = z.discriminatedUnion('kind', [RoundClosingNotice, FinalBoardPublishedNotice]);
export type BenchmarkNotice = z.infer<typeof BenchmarkNotice>;

/** To every `/live` socket, no room needed (spectators included): pages filter by benchmark. */
export const BenchmarkNoticeEvent = z.object({ notice: BenchmarkNotice });
