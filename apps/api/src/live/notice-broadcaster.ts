import type { EventBus } from '../common/event-bus';
import type { LiveNamespace } from '../socket/socket-server';

export interface NoticeBroadcasterDeps {
  bus: Pick<EventBus, 'on'>;
  nsp: () => LiveNamespace;
}

/**
 * Benchmark notices on `/live` (`benchmark.notice`: a close is near, the final board is published):
 * to every socket on every replica (the adapter carries a namespace-wide emit), spectators
 * included, since the benchmark, leaderboard and team pages all show them. The notice is emitted on
 * the bus once, by the replica that claimed it, so each socket hears it once.
 */
export class NoticeBroadcaster {
  constructor(private readonly deps: NoticeBroadcasterDeps) {}

  /** Starts listening; returns the unsubscribe. */
  start(): () => void {
    return this.deps.bus.on(
      'benchmark.notice',
      ({ notice }) => void this.deps.nsp().emit('benchmark.notice', { notice }),
    );
  }
}
