import { Logger } from '@nestjs/common';
import type { LogLine } from '@dryft/libs';
import { CONFIG, Config } from '../config/config';
import { SocketServer } from '../socket/socket-server';
import { forRun } from '../common/logging';

/**
 * What a replica does with lines another replica stored for a run it watches: `lines` in seq order
 * (none when the other replica sent only where the run's log is stored up to, `storedUpTo`).
 */
export type RemoteLinesHandler = (runId: string, lines: LogLine[], storedUpTo: number) => void;

/**
 * Lines stored on one replica, carried to the replicas that have watchers of that run, and to no
 * other. Each run has a channel of its own: the storing replica publishes every batch to it, and a
 * replica listens to it while its RunChannels keeps a channel for that run, that is while it has
 * local watchers of it. A batch that no other replica heard makes the run's next batches go out as a
 * marker only (the seq its log is stored up to), not as lines, until a marker is heard again: a
 * replica that began listening reads those lines from the database, and the storing replica does not
 * encode and send every batch of the many runs nobody watches elsewhere.
 *
 * Delivery is best-effort: a batch lost on the way (Redis down, a subscription not yet in place) is
 * filled from the database by RunChannels, at the next batch that arrives or at `onReconnected`.
 */
export abstract class RemoteRunLines {
  /** Lines just stored here, in seq order: to the replicas watching `runId`. Never throws, never waits. */
  abstract publish(runId: string, lines: LogLine[]): void;
  /**
   * From now on, lines other replicas store for `runId` reach the handler. Resolves once the
   * subscription is in place (or at once when it cannot be now: Redis down); never rejects.
   */
  abstract watch(runId: string): Promise<void>;
  /** The last local watcher left: this replica stops receiving `runId`'s lines. Never rejects. */
  abstract unwatch(runId: string): Promise<void>;
  /** Where received lines go (the live gateway's RunChannels). */
  abstract onLines(handler: RemoteLinesHandler): void;
  /**
   * Called after the link came back from an outage, once the subscriptions are in place again (or
   * after a subscription that came later than its replay): whatever was stored meanwhile must be
   * read from the database.
   */
  abstract onReconnected(handler: () => void): void;
}

/** One process, no Redis: there is no other replica to tell or to hear from. */
export class NoRemoteRunLines extends RemoteRunLines {
  publish(): void {}
  watch(): Promise<void> {
    return Promise.resolve();
  }
  unwatch(): Promise<void> {
    return Promise.resolve();
  }
  onLines(): void {}
  onReconnected(): void {}
}

/** The part of a node-redis client used here (the real one in the app, a fake in unit tests). */
export interface PubSubClient {
  readonly isReady: boolean;
  publish(channel: string, message: string): Promise<unknown>;
  subscribe(channel: string, listener: (message: string, channel: string) => void): Promise<unknown>;
  unsubscribe(channel: string, listener?: (message: string, channel: string) => void): Promise<unknown>;
  on(event: 'ready' | 'error', listener: (...args: unknown[]) => void): unknown;
}

/** Runs remembered as heard by no other replica, at most (the oldest is forgotten first). */
const MAX_UNHEARD_RUNS = 10_000;

/** How long a join waits for its subscription before replaying anyway (the catch-up covers the rest). */
const SUBSCRIBE_WAIT_MS = 2_000;

/**
 * Redis pub/sub, one channel per run (`<REDIS_STREAM>:runlog:<runId>`): `publisher` is the client the
 * socket.io adapter writes with, `subscriber` a connection of its own (a subscribed connection can
 * do nothing else). Subscribe and unsubscribe of one run are applied in the order they were asked.
 * A message is `<replica id>\n<JSON lines>`, or `<replica id>\n<seq>` for a marker, so a replica skips
 * its own batches without decoding them (its watchers had them from its event bus).
 */
export class RedisRunLines extends RemoteRunLines {
  private readonly logger = new Logger('RemoteRunLines');
  private handler: RemoteLinesHandler = () => undefined;
  private reconnected: () => void = () => undefined;
  /** Runs subscribed (or being subscribed) here, each with its queue of subscribe/unsubscribe. */
  private readonly runs = new Map<string, Promise<void>>();
  private readonly wanted = new Set<string>();
  private readonly prefix: string;
  private readonly ownTag: string;
  private publishFailing = false;
  /**
   * Per run, the last batch that could not be published while Redis was away. Sent again when the
   * publisher is back: a replica whose subscriber came back first (and caught up then) would
   * otherwise wait for the run's next batch to see the lines stored since; this one's gap fill
   * brings it up to date. One batch per run at most, not a queue.
   */
  private readonly dropped = new Map<string, LogLine[]>();
  /** What this replica decoded from other replicas (tests and the bench read these). */
  readonly received = { batches: 0, lines: 0, markers: 0 };
  /** What this replica published: batches as lines, and markers (tests read these). */
  readonly sent = { batches: 0, markers: 0 };
  /** Runs whose last message no other replica heard: their batches go out as markers. */
  private readonly unheard = new Set<string>();

  private bound?: { publisher: PubSubClient; subscriber: PubSubClient };

  /**
   * `clients`: the connected publisher and subscriber, asked for on first use (the socket server
   * connects them in its own init, after this is built).
   */
  constructor(
    private readonly clients: () => { publisher: PubSubClient; subscriber: PubSubClient },
    streamName: string,
    replicaId: string,
  ) {
    super();
    this.prefix = `${streamName}:runlog:`;
    this.ownTag = `${replicaId}\n`;
  }

  private get publisher(): PubSubClient {
    return this.bind().publisher;
  }

  private get subscriber(): PubSubClient {
    return this.bind().subscriber;
  }

  private bind() {
    if (this.bound) return this.bound;
    this.bound = this.clients();
    this.bound.publisher.on('ready', () => this.republishDropped());
    this.bound.subscriber.on('ready', () => {
      // node-redis restores the subscriptions before 'ready'; this is called on a reconnect only
      // (the first connect happened before binding).
      this.reconnected();
    });
    return this.bound;
  }

  channel(runId: string): string {
    return this.prefix + runId;
  }

  /** Runs this replica listens to now (tests). */
  get watching(): string[] {
    return [...this.wanted];
  }

  publish(runId: string, lines: LogLine[]): void {
    if (lines.length === 0) return;
    // Not queued while Redis is away (node-redis would keep every batch in memory until it is back):
    // remote watchers fill the gap from the database instead.
    if (!this.publisher.isReady) {
      this.dropped.set(runId, lines);
      this.publishFailed('Redis is not connected');
      return;
    }
    this.dropped.delete(runId);
    const storedUpTo = lines[lines.length - 1].seq;
    const marker = this.unheard.has(runId);
    const message = this.ownTag + (marker ? String(storedUpTo) : JSON.stringify(lines));
    if (marker) this.sent.markers++;
    else this.sent.batches++;
    this.publisher.publish(this.channel(runId), message).then(
      (receivers) => {
        this.publishFailing = false;
        this.heardBy(runId, Number(receivers));
      },
      (err: unknown) => {
        if (!this.dropped.has(runId)) this.dropped.set(runId, lines);
        this.publishFailed((err as Error).message);
      },
    );
  }

  /**
   * Redis counts every connection a message reached, this replica's own subscriber among them while
   * it watches the run. Counted as heard when unsure (an own subscription still on its way): a batch
   * sent as lines is never wrong, only a marker when someone listens would cost that replica a read.
   */
  private heardBy(runId: string, receivers: number): void {
    const others = receivers - (this.wanted.has(runId) ? 1 : 0);
    if (others > 0 || Number.isNaN(receivers)) {
      this.unheard.delete(runId);
      return;
    }
    // Bounded: a run forgotten here is sent as lines once more, and marked again.
    if (this.unheard.size >= MAX_UNHEARD_RUNS) this.unheard.delete(this.unheard.values().next().value!);
    this.unheard.add(runId);
  }

  /** The publisher is connected again: each run's last unpublished batch goes out now. */
  private republishDropped(): void {
    const batches = [...this.dropped];
    this.dropped.clear();
    for (const [runId, lines] of batches) this.publish(runId, lines);
  }

  watch(runId: string): Promise<void> {
    this.wanted.add(runId);
    const done = this.inOrder(runId, () => this.subscriber.subscribe(this.channel(runId), this.listener));
    // Redis away: the replay goes on now; the reconnect ('ready') asks for the catch-up.
    if (!this.subscriber.isReady) return Promise.resolve();
    let late = false;
    const waited = new Promise<void>((r) =>
      setTimeout(() => {
        late = true;
        r();
      }, SUBSCRIBE_WAIT_MS).unref(),
    );
    // A subscription that came after the replay went on: what was published in between is read
    // from the database (as after a reconnect), in case no further batch comes to fill the gap.
    void done.then(() => {
      if (late && this.wanted.has(runId)) this.reconnected();
    });
    return Promise.race([done, waited]);
  }

  unwatch(runId: string): Promise<void> {
    this.wanted.delete(runId);
    return this.inOrder(runId, () => this.subscriber.unsubscribe(this.channel(runId), this.listener));
  }

  onLines(handler: RemoteLinesHandler): void {
    this.handler = handler;
  }

  onReconnected(handler: () => void): void {
    this.reconnected = handler;
  }

  /** Queues `step` after the run's earlier subscribe/unsubscribe; the queue is dropped when it empties. */
  private inOrder(runId: string, step: () => Promise<unknown>): Promise<void> {
    const prev = this.runs.get(runId) ?? Promise.resolve();
    const next = prev.then(step).then(
      () => undefined,
      (err: unknown) => this.logger.warn(`run ${runId}: ${(err as Error).message}`, forRun(runId)),
    );
    this.runs.set(runId, next);
    void next.then(() => {
      if (this.runs.get(runId) === next) this.runs.delete(runId);
    });
    return next;
  }

  private readonly listener = (message: string, channel: string): void => {
    if (message.startsWith(this.ownTag) || !channel.startsWith(this.prefix)) return;
    const runId = channel.slice(this.prefix.length);
    if (!this.wanted.has(runId)) return;
    const nl = message.indexOf('\n');
    let body: unknown;
    try {
      body = JSON.parse(message.slice(nl + 1));
    } catch {
      return;
    }
    if (Number.isSafeInteger(body) && (body as number) > 0) {
      this.received.markers++;
      this.handler(runId, [], body as number);
      return;
    }
    if (!Array.isArray(body) || body.length === 0) return;
    const lines = body as LogLine[];
    this.received.batches++;
    this.received.lines += lines.length;
    this.handler(runId, lines, lines[lines.length - 1].seq);
  };

  private publishFailed(why: string): void {
    if (this.publishFailing) return;
    this.publishFailing = true;
    this.logger.warn(
      `lines not sent to other replicas (${why}); their watchers will read them from the database`,
    );
  }
}

/** The Nest provider: Redis pub/sub beside the socket.io adapter when REDIS_URL is set, nothing otherwise. */
export const remoteRunLinesProvider = {
  provide: RemoteRunLines,
  inject: [SocketServer, CONFIG],
  useFactory: (sockets: SocketServer, config: Config): RemoteRunLines =>
    config.REDIS_URL
      ? new RedisRunLines(
          () => sockets.pubSub as unknown as { publisher: PubSubClient; subscriber: PubSubClient },
          config.REDIS_STREAM,
          sockets.replicaId,
        )
      : new NoRemoteRunLines(),
};
