import type { AccessLost } from '../live/live-access';
import type { PublicChange } from '../leaderboards/public-snapshots';

/**
 * Every message one replica of the hub sends the others (`serverSideEmit` through the Redis streams
 * adapter), by namespace, with its payload: the one place their names are spelled. A receiver still
 * checks the payload, since another replica may run another version.
 */

/** `/live`: between replicas. */
export interface LiveReplicaMessages {
  /** A credential or a membership stopped granting access; every replica cuts its own sockets. */
  'dryft:access.lost': (lost: AccessLost) => void;
  /** Public data changed; every replica drops its snapshots of it (PublicSnapshots). */
  'dryft:public.changed': (change: PublicChange) => void;
}

/** `/agents`: between replicas. */
export interface AgentReplicaMessages {
  /** "A run was queued somewhere, or a slot freed: try your agents." */
  'dryft:dispatch': () => void;
}

export const REMOTE_ACCESS_LOST = 'dryft:access.lost' satisfies keyof LiveReplicaMessages;
export const REMOTE_PUBLIC_CHANGED = 'dryft:public.changed' satisfies keyof LiveReplicaMessages;
export const DISPATCH_SIGNAL = 'dryft:dispatch' satisfies keyof AgentReplicaMessages;
