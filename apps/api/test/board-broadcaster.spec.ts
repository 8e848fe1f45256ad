import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { applyLeaderboardDiff } from '@dryft/libs';
import type { LeaderboardDiffEvent, LeaderboardEntry, LeaderboardView } from '@dryft/libs';
import type { BenchmarksService } from '../src/benchmarks/benchmarks.service';
import { EventBus } from '../src/common/event-bus';
import type { LeaderboardsService } from '../src/leaderboards/leaderboards.service';
import { PublicSnapshots } from '../src/leaderboards/public-snapshots';
import { BoardBroadcaster, LEADERBOARD_COALESCE_MS } from '../src/live/board-broadcaster';
import { fakeLive } from './builders/live-sockets';

const entry = (rank: number, name: string, score: number): LeaderboardEntry => ({
  rank,
  name,
  teamSlug: name,
  userLogin: null,
  score,
  interval: null,
  pairs: null,
  overlapsPrevious: false,
  overlapsNext: false,
  runId: `run-${name}`,
  achievedAt: '2026-12-01T00:00:00.000Z',
});
const board = (entries: LeaderboardEntry[]): LeaderboardView => ({
  benchmarkId: 'b1',
  rulesVersion: 1,
  ranks: 'teams',
  entries,
  updatedAt: new Date().toISOString(),
});
const many = (n: number, bump = 0) =>
  Array.from({ length: n }, (_, i) => entry(i + 1, `team-${i}`, 1000 - i + (i === n - 1 ? bump : 0)));

/**
 * The real snapshots over a board the test sets, never subscribed to the bus: whatever drops a
 * board here is the broadcaster itself.
 */
function world() {
  const state = { board: board(many(20)), reads: 0, down: false };
  const boards = {
    get: async () => {
      state.reads++;
      if (state.down) throw new Error('connection refused');
      return state.board;
    },
  } as unknown as LeaderboardsService;
  const snapshots = new PublicSnapshots(boards, {} as BenchmarksService, new EventBus());
  const live = fakeLive();
  const errors: string[] = [];
  const broadcaster = new BoardBroadcaster({
    boards: snapshots,
    nsp: () => live.nsp,
    logError: (m) => errors.push(m),
  });
  const toBoard = () => live.sent.filter((s) => s.to === 'leaderboard:b1');
  return { state, snapshots, broadcaster, toBoard, errors };
}

describe('BoardBroadcaster', () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  it('drops the board itself on a change, so its broadcast carries the new board', async () => {
    const w = world();
    await w.snapshots.leaderboard('b1'); // the old board, kept in memory
    w.state.board = board(many(20, 5));
    w.broadcaster.changed('b1');
    await vi.advanceTimersToNextTimerAsync();
    const [first] = w.toBoard();
    expect(first.event).toBe('leaderboard.update');
    expect((first.payload as { leaderboard: LeaderboardView }).leaderboard.entries[19].score).toBe(
      w.state.board.entries[19].score,
    );
    expect(w.state.reads).toBe(2);
  });

  it('broadcasts changes made together once, and changes inside the window once more after it', async () => {
    const w = world();
    for (let i = 0; i < 10; i++) w.broadcaster.changed('b1');
    await vi.advanceTimersToNextTimerAsync(); // the immediate
    expect(w.toBoard()).toHaveLength(1);
    for (let i = 0; i < 10; i++) w.broadcaster.changed('b1');
    await vi.advanceTimersByTimeAsync(LEADERBOARD_COALESCE_MS);
    expect(w.toBoard()).toHaveLength(2);
    // The window after the trailing broadcast closes quietly; the next change starts afresh.
    await vi.advanceTimersByTimeAsync(LEADERBOARD_COALESCE_MS * 2);
    expect(w.toBoard()).toHaveLength(2);
    w.broadcaster.changed('b1');
    await vi.advanceTimersToNextTimerAsync();
    expect(w.toBoard()).toHaveLength(3);
  });

  it('sends the places that changed when that is smaller than the board, and the diff applies to the last one sent', async () => {
    const w = world();
    w.broadcaster.changed('b1');
    await vi.advanceTimersToNextTimerAsync();
    await vi.advanceTimersByTimeAsync(LEADERBOARD_COALESCE_MS);
    const first = w.toBoard()[0].payload as { leaderboard: LeaderboardView; version: string };
    w.state.board = board(many(20, 5));
    w.broadcaster.changed('b1');
    await vi.advanceTimersToNextTimerAsync();
    const second = w.toBoard()[1];
    expect(second.event).toBe('leaderboard.diff');
    const diff = second.payload as LeaderboardDiffEvent;
    expect(diff.from).toBe(first.version);
    expect(diff.places).toHaveLength(1);
    expect(applyLeaderboardDiff(first.leaderboard, first.version, diff)?.entries).toEqual(
      w.state.board.entries,
    );
  });

  it('sends the whole board again after another replica changed it (its last board is no longer the base)', async () => {
    const w = world();
    w.broadcaster.changed('b1');
    await vi.advanceTimersToNextTimerAsync();
    await vi.advanceTimersByTimeAsync(LEADERBOARD_COALESCE_MS);
    w.broadcaster.changedElsewhere({ kind: 'board', benchmarkId: 'b1' });
    w.state.board = board(many(20, 5));
    w.broadcaster.changed('b1');
    await vi.advanceTimersToNextTimerAsync();
    expect(w.toBoard().map((s) => s.event)).toEqual(['leaderboard.update', 'leaderboard.update']);
  });

  it('logs a board it cannot read and broadcasts nothing', async () => {
    const w = world();
    w.state.down = true;
    w.broadcaster.changed('b1');
    await vi.advanceTimersToNextTimerAsync();
    expect(w.toBoard()).toHaveLength(0);
    expect(w.errors).toEqual(['leaderboard b1: connection refused']);
  });
});
