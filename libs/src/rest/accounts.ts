import { z } from 'zod';
import { storedText } from './text';

/** REST bodies for sign-in, the current user, teams and team API tokens. */
export const Role = z.enum(['owner', 'admin', 'member']);
export type Role = z.infer<typeof Role>;

export const DevSignInBody = z.object({
  login: z
    .string()
    .trim()
    .regex(
      /^[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})$/,
      'a GitHub-style login: letters, digits and dashes, up to 39 characters',
    ),
});

export const UserView = z.object({
  id: z.string(),
  login: z.string(),
  name: z.string().nullable(),
  avatarUrl: z.string().nullable(),
  isAdmin: z.boolean(),
});
export type UserView = z.infer<typeof UserView>;

export const TeamSummary = z.object({
  id: z.string(),
  name: z.string(),
  slug: z.string(),
  role: Role,
  memberCount: z.number().int(),
});
export type TeamSummary = z.infer<typeof TeamSummary>;

export const MeView = z.object({
  user: UserView,
  teams: z.array(TeamSummary),
  activeTeamId: z.string().nullable(),
  /** How this request was authenticated; a token acts for its team only. */
  via: z.enum(['session', 'token']),
  csrfToken: z.string().nullable(),
});
export type MeView = z.infer<typeof MeView>;

export const CreateTeamBody = z.object({
  name: storedText(z.string().trim().min(2, 'at least 2 characters').max(60, 'at most 60 characters')),
});
export const JoinTeamBody = z.object({
  code: storedText(z.string().trim().min(1, 'enter the six-character invite code')),
});
export const SwitchTeamBody = z.object({ teamId: z.string().uuid('a team id') });
export const ChangeRoleBody = z.object({ role: Role });
export const LeaveTeamBody = z.object({ newOwnerUserId: z.string().uuid().optional() });

export const MemberView = z.object({
  userId: z.string(),
  login: z.string(),
  name: z.string().nullable(),
  avatarUrl: z.string().nullable(),
  role: Role,
  joinedAt: z.string(),
});
export type MemberView = z.infer<typeof MemberView>;

export const TeamDetail = z.object({
  id: z.string(),
  name: z.string(),
  slug: z.string(),
  role: Role,
  /** Only owners and admins see the invite code. */
  inviteCode: z.string().nullable(),
  members: z.array(MemberView),
  createdAt: z.string(),
});
export type TeamDetail = z.infer<typeof TeamDetail>;

export const CreateTokenBody = z.object({
  name: storedText(z.string().trim().min(1, 'give the token a name').max(80)),
  expiresAt: z
    .string()
    .datetime({ offset: true, message: 'an ISO 8601 date-time such as 2027-01-31T00:00:00Z' })
    .optional(),
});

export const TokenView = z.object({
  id: z.string(),
  name: z.string(),
  prefix: z.string(),
  createdBy: z.string(),
  createdAt: z.string(),
  lastUsedAt: z.string().nullable(),
  expiresAt: z.string().nullable(),
  revokedAt: z.string().nullable(),
});
export type TokenView = z.infer<typeof TokenView>;

export const CreatedTokenView = TokenView.extend({
  /** The full value, returned once by the create call and never again. */
  token: z.string(),
});
export type CreatedTokenView = z.infer<typeof CreatedTokenView>;

export const HealthView = z.object({
  status: z.enum(['ok', 'degraded']),
  db: z.enum(['up', 'down']),
  version: z.string(),
});
