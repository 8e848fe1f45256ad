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
});
export type TeamStorageView = z.infer<typeof TeamStorageView>;

export const StorageView = z.object({
  teams: z.array(TeamStorageView),
  totals: z.object({
    logBytes: z.number().int(),
    artifactBytes: z.number().int(),
    logLines: z.number().int(),
  }),
});
export type StorageView = z.infer<typeof StorageView>;
