import { z } from 'zod';
import { createZodDto } from 'nestjs-zod';
import { storedText } from '@dryft/libs';

export const UpdateBenchmarkBody = z
  .object({
    submissionsOpen: z.boolean().optional(),
    evaluationsOpen: z.boolean().optional(),
    runTimeLimitSeconds: z
      .number()
      .int()
      .min(10, 'at least 10 seconds')
      .max(7 * 24 * 3600)
      .optional(),
    announcement: storedText(z.string().max(2000)).nullable().optional(),
    /** Why (optional): recorded in the audit log with the change. */
    reason: storedText(z.string().trim().max(1000)).optional(),
  })
  .strict()
  .refine(
    (b) => Object.keys(b).filter((k) => k !== 'reason').length > 0,
    'send at least one of submissionsOpen, evaluationsOpen, runTimeLimitSeconds, announcement',
  );

export const BumpRulesBody = z.object({
  reason: storedText(z.string().trim().min(3, 'say why the rules changed; participants see it')),
  confirm: z.literal(true, {
    message: 'bumping the rules version invalidates every earlier result: send confirm: true',
  }),
});

export class UpdateBenchmarkDto extends createZodDto(UpdateBenchmarkBody) {}
export class BumpRulesDto extends createZodDto(BumpRulesBody) {}
