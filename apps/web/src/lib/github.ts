import type { DeliveryView } from '@dryft/libs';

/** The views of the GitHub routes, defined once in libs/src/rest/github.ts. */
export type { GithubStatus, GrantedRepositories, GrantedRepository } from '@dryft/libs';

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
