import type { DeliveryView } from '@dryft/libs';

/** GET /api/github/status: whether this hub has the GitHub App (public; always answers). */
export type GithubStatus =
  | { configured: true; appSlug: string; appUrl: string; webUrl: string }
  | { configured: false; message: string; missing?: string[] };

/** One repository the team's installations grant (GET /api/teams/:id/github/repositories). */
export interface GrantedRepository {
  id: string;
  fullName: string;
  name: string;
  owner: string;
  defaultBranch: string;
  private: boolean;
  htmlUrl: string;
  installationId: string;
  /** This team's connection of it, if connected. */
  connectionId: string | null;
  /** Connected to another team: it cannot be connected here. */
  connectedElsewhere: boolean;
}

export interface GrantedRepositories {
  installations: { installationId: string; account: string; accountType: string; createdAt: string }[];
  repositories: GrantedRepository[];
}

/** Deliveries still being worked on: "Check delivery" refreshes itself while any is. */
export const pendingDelivery = (d: Pick<DeliveryView, 'status'>): boolean =>
  d.status === 'queued' || d.status === 'processing';

/** Badge class of a delivery result. */
export const deliveryClass = (s: DeliveryView['status']): string =>
  s === 'succeeded' ? 'ok' : s === 'failed' || s === 'rejected' ? 'bad' : s === 'ignored' ? '' : 'warn';

/** "push refs/heads/main", "run_now.official": what triggered a delivery, in a few words. */
export function deliveryEvent(d: Pick<DeliveryView, 'event' | 'action' | 'ref'>): string {
  const event = d.event === 'run_now' ? 'Run now' : d.event;
  const action = d.action ? (d.event === 'run_now' ? ` (${d.action})` : `.${d.action}`) : '';
  const ref = d.ref ? ` ${d.ref.replace(/^refs\/heads\//, '')}` : '';
  return `${event}${action}${ref}`;
}
