import type { LogLine } from '@dryft/libs';
import { LATENCY_TRACE, traceMark } from '../common/latency-trace';
import type { LiveNamespace, LiveSocket } from '../socket/socket-server';

/** Reads stored lines of a run after a seq, in order (the runs repository in the app, a stub in unit tests). */
export type ReadLines = (runId: string, after: number, limit: number) => Promise<LogLine[]>;

/**
 * Where this replica hears of lines other replicas store (live/remote-run-lines.ts): a run is
 * watched while it has a channel here, that is while it has local watchers, and only then.
 */
export interface RemoteWatch {
  /** Resolves once lines stored elsewhere reach `deliver` (or it cannot be now); never rejects. */
  watch(runId: string): Promise<void>;
  unwatch(runId: string): Promise<void>;
}

const NO_REMOTE: RemoteWatch = { watch: () => Promise.resolve(), unwatch: () => Promise.resolve() };

const PAGE = 2_000;

/**
 * Log delivery for one run's watchers on this process, with the guarantee "every line once, in
 * order", across joins, reconnects (`afterSeq`) and replicas.
 *
 * All operations on one run are serialized. The channel keeps `cursor`, the last seq its live members
 * have received, so a live batch is one broadcast to a local room (encoded once, however many
 * watchers): lines at or below the cursor are dropped (duplicates), and a gap before a batch (a line
 * event that reached this replica late or not at all) is filled from the database first.
 *
 * A joining socket first gets the stored lines after its `afterSeq`, page by page; then the channel
 * brings everyone to the same point (members get what was stored meanwhile, or the newcomer gets
 * what members already had) and the socket joins the live room. Because live batches wait in the same
 * queue while the replay runs, nothing slips between the stored lines and the live ones.
 *
 * Other replicas' lines reach this one only for runs it has a channel for (`remote`): the channel's
 * first step is the subscription, before the first replay reads the database, so a line is either
 * stored before that read (and replayed) or published after the subscription (and delivered live).
 * The last watcher leaving ends the subscription.
 */
export class RunChannels {
  private readonly channels = new Map<string, Channel>();

  constructor(
    private readonly nsp: () => LiveNamespace,
    private readonly read: ReadLines,
    private readonly remote: RemoteWatch = NO_REMOTE,
  ) {}

  static room(runId: string): string {
    return `runlog:${runId}`;
  }

  /**
   * Lines just stored (here or on another replica), in seq order, the run's log now stored up to
   * `storedUpTo`. Another replica may send no lines and only `storedUpTo` (it stopped sending a run's
   * lines while no replica listened): what this replica's watchers lack is read from the database.
   */
  deliver(runId: string, lines: LogLine[], storedUpTo = lines.at(-1)?.seq ?? 0): Promise<void> {
    const ch = this.channels.get(runId);
    if (!ch || (lines.length === 0 && storedUpTo === 0)) return Promise.resolve();
    return ch.enqueue(async () => {
      if (ch.cursor === null) return;
      const fresh = lines.filter((l) => l.seq > ch.cursor!);
      // Stored and never received here: before the first fresh line, or up to `storedUpTo`.
      const missingUpTo = fresh.length ? fresh[0].seq - 1 : storedUpTo;
      if (missingUpTo > ch.cursor) {
        const gap = await this.readRange(runId, ch.cursor, missingUpTo);
        this.broadcast(runId, gap);
        ch.cursor = Math.max(ch.cursor, gap.length ? gap[gap.length - 1].seq : ch.cursor);
      }
      const rest = fresh.filter((l) => l.seq > ch.cursor!);
      if (rest.length === 0) return;
      if (LATENCY_TRACE) traceMark(`batch:${runId}:${lines[0].seq}`, 'deliver');
      this.broadcast(runId, rest);
      if (LATENCY_TRACE) traceMark(`batch:${runId}:${lines[0].seq}`, 'broadcast');
      ch.cursor = rest[rest.length - 1].seq;
    });
  }

  /**
   * Replays the stored lines after `afterSeq` to the socket, then makes it a live member; stops as
   * soon as `allowed` says no (the socket lost access meanwhile).
   */
  join(
    socket: LiveSocket,
    runId: string,
    afterSeq: number,
    allowed: () => boolean = () => true,
  ): Promise<void> {
    let ch = this.channels.get(runId);
    if (!ch) {
      ch = new Channel();
      this.channels.set(runId, ch);
      void ch.enqueue(() => this.remote.watch(runId));
    }
    const channel = ch;
    channel.pending.add(socket.id);
    return channel.enqueue(async () => {
      try {
        let last = afterSeq;
        for (;;) {
          if (!socket.connected || !allowed()) return;
          const page = await this.read(runId, last, PAGE);
          if (!socket.connected || !allowed()) return;
          if (page.length) {
            socket.emit('run.log', { runId, lines: page });
            last = page[page.length - 1].seq;
          }
          if (page.length < PAGE) break;
        }
        if (!socket.connected || !allowed()) return;
        if (channel.cursor === null || channel.members.size === 0) {
          channel.cursor = last;
        } else if (last > channel.cursor) {
          // Lines stored before their live event arrived: the members get them now, in order.
          const missing = await this.readRange(runId, channel.cursor, last);
          this.broadcast(runId, missing);
          channel.cursor = last;
        } else if (last < channel.cursor) {
          const behind = await this.readRange(runId, last, channel.cursor);
          if (behind.length && allowed()) socket.emit('run.log', { runId, lines: behind });
        }
        if (!allowed()) return;
        await socket.join(RunChannels.room(runId));
        channel.members.add(socket.id);
      } finally {
        channel.pending.delete(socket.id);
      }
    });
  }

  leave(socket: LiveSocket, runId: string): Promise<void> {
    const ch = this.channels.get(runId);
    if (!ch) return Promise.resolve();
    return ch.enqueue(async () => {
      await socket.leave(RunChannels.room(runId));
      ch.members.delete(socket.id);
      if (ch.members.size === 0 && ch.pending.size === 0) {
        ch.cursor = null;
        if (this.channels.get(runId) === ch) {
          this.channels.delete(runId);
          void this.remote.unwatch(runId);
        }
      }
    });
  }

  /** The socket lost access: out of the live room now (no further line reaches it), then forgotten. */
  evict(socket: LiveSocket, runId: string): void {
    void socket.leave(RunChannels.room(runId));
    void this.leave(socket, runId);
  }

  /** The socket went away: leave every run it watched. */
  forget(socket: LiveSocket): void {
    for (const [runId, ch] of this.channels) {
      if (ch.members.has(socket.id) || ch.pending.has(socket.id)) void this.leave(socket, runId);
    }
  }

  /**
   * Lines may have been stored without reaching this replica (the link to the other replicas was
   * down): every watched run reads what was stored after its cursor and broadcasts it.
   */
  catchUp(): Promise<void> {
    return Promise.all(
      [...this.channels].map(([runId, ch]) =>
        ch.enqueue(async () => {
          if (ch.cursor === null) return;
          for (;;) {
            const page = await this.read(runId, ch.cursor, PAGE);
            if (ch.cursor === null) return;
            const fresh = page.filter((l) => l.seq > ch.cursor!);
            this.broadcast(runId, fresh);
            if (fresh.length) ch.cursor = fresh[fresh.length - 1].seq;
            if (page.length < PAGE) return;
          }
        }),
      ),
    ).then(() => undefined);
  }

  watched(runId: string): boolean {
    return this.channels.has(runId);
  }

  private broadcast(runId: string, lines: LogLine[]): void {
    if (lines.length) this.nsp().local.to(RunChannels.room(runId)).emit('run.log', { runId, lines });
  }

  private async readRange(runId: string, after: number, upTo: number): Promise<LogLine[]> {
    const out: LogLine[] = [];
    let cursor = after;
    while (cursor < upTo) {
      const page = await this.read(runId, cursor, Math.min(PAGE, upTo - cursor));
      if (page.length === 0) break;
      for (const l of page) if (l.seq <= upTo) out.push(l);
      cursor = page[page.length - 1].seq;
    }
    return out;
  }
}

class Channel {
  /** Last seq every live member has; null while nobody watches. */
  cursor: number | null = null;
  readonly members = new Set<string>();
  readonly pending = new Set<string>();
  private tail: Promise<void> = Promise.resolve();

  enqueue(work: () => Promise<void>): Promise<void> {
    const next = this.tail.then(work, work);
    this.tail = next.catch(() => undefined);
    return next;
  }
}
