import { createZodDto } from 'nestjs-zod';
import { z } from 'zod';

/** GitHub's numeric ids arrive as numbers or strings; kept as digit strings (they exceed int32). */
const githubId = z
  .union([z.number().int().positive(), z.string().regex(/^\d{1,20}$/, 'a numeric GitHub id')])
  .transform(String);

export const ConnectRepositoryBody = z
  .object({
    installationId: githubId.optional(),
    repositoryId: githubId.optional(),
    fullName: z
      .string()
      .regex(/^[A-Za-z0-9_.-]+\/[A-Za-z0-9_.-]+$/, 'owner/name')
      .optional(),
    engineFolder: z.string().min(1).max(200).default('engine'),
    benchmark: z.string().min(1).default('qwen3-4b-decode'),
  })
  .strict()
  .refine((b) => Boolean(b.repositoryId) !== Boolean(b.fullName), {
    message: 'send either repositoryId or fullName (owner/name), not both',
  });

export const UpdateConnectionBody = z
  .object({
    autoRun: z.boolean().optional(),
    evaluation: z.enum(['public', 'official']).optional(),
    engineFolder: z.string().min(1).max(200).optional(),
  })
  .strict()
  .refine((b) => Object.values(b).some((v) => v !== undefined), {
    message: 'send at least one of autoRun, evaluation, engineFolder',
  });

export class ConnectRepositoryDto extends createZodDto(ConnectRepositoryBody) {}
export class UpdateConnectionDto extends createZodDto(UpdateConnectionBody) {}

/** What the Repositories page shows for one connection. */
export interface ConnectionView {
  id: string;
  teamId: string;
  installationId: string;
  repositoryId: string;
  fullName: string;
  htmlUrl: string;
  defaultBranch: string;
  engineFolder: string;
  benchmark: string;
  autoRun: boolean;
  evaluation: 'public' | 'official';
  connectedBy: string;
  createdAt: string;
  updatedAt: string;
  lastDelivery: DeliveryView | null;
}

/** One row of "Check delivery". */
export interface DeliveryView {
  id: string;
  githubDeliveryId: string | null;
  event: string;
  action: string | null;
  status: 'rejected' | 'queued' | 'processing' | 'succeeded' | 'failed' | 'ignored';
  reason: string | null;
  failureCode: string | null;
  ref: string | null;
  commitSha: string | null;
  submissionId: string | null;
  runId: string | null;
  attempts: number;
  receivedAt: string;
  processedAt: string | null;
  redeliverable: boolean;
}
