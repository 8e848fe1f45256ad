import { z } from 'zod';

/** Every API error body: `{ error: { code, message } }` with an honest HTTP status. */
export const ApiErrorBody = z.object({
  error: z.object({ code: z.string(), message: z.string(), details: z.unknown().optional() }),
});
export type ApiErrorBody = z.infer<typeof ApiErrorBody>;
