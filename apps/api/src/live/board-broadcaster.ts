import { leaderboardDiff } from '@dryft/libs';
import type { LeaderboardView } from '@dryft/libs';
import { traceEnd, traceMark } from '../common/latency-trace';
import { boardVersion, PublicChange, PublicSnapshots, Snapshot } from '../leaderboards/public-snapshots';
import type { LiveNamespace } from '../socket/socket-server';

/**
 * A board changes, and its spectators get it at once (the broadcast leaves on the next turn of the
 * event loop, so changes made together cost one); further changes within this window after a
 * broadcast wait for its end and cost one more read and broadcast between them (runs finishing
 * together, a rules bump). A single change pays no window at all (bench/RESULTS.md).
 */
export const LEADERBOARD_COALESCE_MS = 50;

/** One board's broadcast schedule: one due on the next turn, or a window open after one. */
interface BoardBroadcast {
  immediate?: NodeJS.Immediate;
  timer?: NodeJS.Timeout;
  /** A change came after the last broadcast started: one more at the end of the window. */
  pending: boolean;
}

export interface BoardBroadcasterDeps {
  boards: Pick<PublicSnapshots, 'leaderboard' | 'apply'>;
  nsp: () => LiveNamespace;
  logError: (message: string) => void;
}

/**
 * The live leaderboards of `/live` (room `leaderboard:<benchmark>`): coalesces a board's changes,
 * drops its snapshot and rebuilds it, and broadcasts the places that changed since the last
 * broadcast (`leaderboard.diff`) or the whole board (`leaderboard.update`).
 */
export class BoardBroadcaster {
  private readonly due = new Map<string, BoardBroadcast>();
  /** The board each benchmark's last broadcast carried: the base of the next diff. */
  private readonly sent = new Map<string, Snapshot<LeaderboardView>>();

  constructor(private readonly deps: BoardBroadcasterDeps) {}

  /**
   * The board changed here. Its snapshot is dropped now, by this call, so the broadcast it schedules
   * reads the new board whatever order the other listeners of the change run in. The first change
   * to a quiet board is broadcast on the next turn of the event loop; changes while that one is due
   * ride along, and changes within the window after it cost one trailing broadcast.
   */
  changed(benchmarkId: string): void {
    traceMark(`board:${benchmarkId}`, 'changed');
    this.deps.boards.apply({ kind: 'board', benchmarkId });
    const due = this.due.get(benchmarkId);
    if (due) {
      if (!due.immediate) due.pending = true;
      return;
    }
    const state: BoardBroadcast = { pending: false };
    this.due.set(benchmarkId, state);
    const window = () => {
      state.timer = setTimeout(() => {
        state.timer = undefined;
        if (!state.pending) {
          this.due.delete(benchmarkId);
          return;
        }
        state.pending = false;
        this.broadcast(benchmarkId);
        window();
      }, LEADERBOARD_COALESCE_MS);
    };
    state.immediate = setImmediate(() => {
      traceMark(`board:${benchmarkId}`, 'immediate');
      state.immediate = undefined;
      this.broadcast(benchmarkId);
      window();
    });
  }

  /**
   * Public data changed on another replica, which broadcasts the change to every replica's
   * spectators itself: this replica drops its snapshots, and its last board is no longer theirs, so
   * its next broadcast is the whole board, not a diff.
   */
  changedElsewhere(change: PublicChange): void {
    this.deps.boards.apply(change);
    if (change.kind === 'people') this.sent.clear();
    else this.sent.delete(change.benchmarkId);
  }

  stop(): void {
    for (const b of this.due.values()) {
      if (b.immediate) clearImmediate(b.immediate);
      if (b.timer) clearTimeout(b.timer);
    }
  }

  /**
   * One snapshot (the one REST reads serve), encoded once by socket.io for the whole room: as the
   * places that changed since the last broadcast where that is smaller than the whole board, else
   * the whole board, versioned by content (boardVersion).
   */
  private broadcast(benchmarkId: string): void {
    this.deps.boards
      .leaderboard(benchmarkId)
      .then((snap) => {
        const trace = `board:${benchmarkId}`;
        traceMark(trace, 'snapshot');
        const nsp = this.deps.nsp();
        const room = nsp.to(`leaderboard:${benchmarkId}`);
        const prev = this.sent.get(benchmarkId);
        this.sent.set(benchmarkId, snap);
        const version = boardVersion(snap);
        const diff =
          prev && boardVersion(prev) !== version
            ? leaderboardDiff(prev.view, boardVersion(prev), snap.view, version)
            : null;
        traceMark(trace, 'diff');
        const diffBytes = diff ? JSON.stringify(diff).length : 0;
        if (diff && diffBytes < snap.body.length) room.emit('leaderboard.diff', diff);
        else room.emit('leaderboard.update', { leaderboard: snap.view, version });
        traceEnd(trace, 'emitted', {
          diffBytes,
          sockets: nsp.adapter.rooms.get(`leaderboard:${benchmarkId}`)?.size,
        });
      })
      .catch((err: unknown) => this.deps.logError(`leaderboard ${benchmarkId}: ${(err as Error).message}`));
  }
}
