import type { Role } from '@dryft/libs';

/**
 * The permission table of the decode product page, in one place.
 * Every member: starter, uploads, runs, cancel, read the team's work.
 * Owners and admins: repositories, webhook deliveries, API tokens, remove members, invite code.
 * Only owners: change roles.
 */
export type TeamAction =
  | 'read'
  | 'submit'
  | 'run'
  | 'cancel'
  | 'manage_tokens'
  | 'manage_repositories'
  | 'remove_members'
  | 'manage_invite_code'
  | 'change_roles'
  | 'manage_webhooks';

const MANAGERS: Role[] = ['owner', 'admin'];

export function roleAllows(role: Role, action: TeamAction): boolean {
  switch (action) {
    case 'read':
    case 'submit':
    case 'run':
    case 'cancel':
      return true;
    case 'change_roles':
    case 'manage_webhooks':
      return role === 'owner';
    default:
      return MANAGERS.includes(role);
  }
}

/** API tokens act with member permissions: management stays with people signed in to the web. */
export function tokenAllows(action: TeamAction): boolean {
  return roleAllows('member', action);
}

export const ACTION_TEXT: Record<TeamAction, string> = {
  read: "read this team's work",
  submit: 'submit for this team',
  run: 'start runs for this team',
  cancel: 'cancel runs of this team',
  manage_tokens: 'manage API tokens',
  manage_repositories: 'connect or change repositories',
  remove_members: 'remove members',
  manage_invite_code: 'see or regenerate the invite code',
  change_roles: 'change member roles',
  manage_webhooks: 'manage outgoing webhooks',
};
