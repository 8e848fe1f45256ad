import { z } from 'zod';

/** REST bodies and views of repository connections (the GitHub App). */

const BIGINT_MAX = BigInt('9223372036854775807');
/** A GitHub numeric id as digits, within the database's 64-bit column (a longer one names nothing). */
export const isGithubId = (value: string): boolean =>
  /^\d{1,19}$/.test(value) && BigInt(value) > BigInt(0) && BigInt(value) <= BIGINT_MAX;

/** GitHub's numeric ids arrive as numbers or strings; kept as digit strings (they exceed int32). */
const githubId = z
  .union([z.number().int().positive(), z.string()])
  .transform(String)
  .refine(isGithubId, 'a numeric GitHub id (digits only, at most 9223372036854775807)');

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

/** One row of "Check delivery". */
export const DeliveryView = z.object({
  id: z.string(),
  githubDeliveryId: z.string().nullable(),
  event: z.string(),
  action: z.string().nullable(),
  status: z.enum(['rejected', 'queued', 'processing', 'succeeded', 'failed', 'ignored']),
  reason: z.string().nullable(),
  failureCode: z.string().nullable(),
  ref: z.string().nullable(),
  commitSha: z.string().nullable(),
  submissionId: z.string().nullable(),
  runId: z.string().nullable(),
  attempts: z.number().int(),
  receivedAt: z.string(),
  processedAt: z.string().nullable(),
  redeliverable: z.boolean(),
});
export type DeliveryView = z.infer<typeof DeliveryView>;

/** What the Repositories page shows for one connection. */
export const ConnectionView = z.object({
  id: z.string(),
  teamId: z.string(),
  installationId: z.string(),
  repositoryId: z.string(),
  fullName: z.string(),
  htmlUrl: z.string(),
  defaultBranch: z.string(),
  engineFolder: z.string(),
  benchmark: z.string(),
  autoRun: z.boolean(),
  evaluation: z.enum(['public', 'official']),
  connectedBy: z.string(),
  createdAt: z.string(),
  updatedAt: z.string(),
  lastDelivery: DeliveryView.nullable(),
});
export type ConnectionView = z.infer<typeof ConnectionView>;

/** GET /api/github/status: whether this hub has the GitHub App (public; always answers). */
export const GithubStatus = z.discriminatedUnion('configured', [
  z.object({ configured: z.literal(true), appSlug: z.string(), appUrl: z.string(), webUrl: z.string() }),
  z.object({ configured: z.literal(false), message: z.string(), missing: z.array(z.string()).optional() }),
]);
export type GithubStatus = z.infer<typeof GithubStatus>;

/** One repository the team's installations grant (GET /api/teams/:id/github/repositories). */
export const GrantedRepository = z.object({
  id: z.string(),
  fullName: z.string(),
  name: z.string(),
  owner: z.string(),
  defaultBranch: z.string(),
  private: z.boolean(),
  htmlUrl: z.string(),
  installationId: z.string(),
  /** This team's connection of it, if connected. */
  connectionId: z.string().nullable(),
  /** Connected to another team: it cannot be connected here. */
  connectedElsewhere: z.boolean(),
});
export type GrantedRepository = z.infer<typeof GrantedRepository>;

export const GrantedRepositories = z.object({
  installations: z.array(
    z.object({
      installationId: z.string(),
      account: z.string(),
      accountType: z.string(),
      createdAt: z.string(),
    }),
  ),
  repositories: z.array(GrantedRepository),
});
export type GrantedRepositories = z.infer<typeof GrantedRepositories>;
