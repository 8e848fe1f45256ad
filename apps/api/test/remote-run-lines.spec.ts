import { describe, expect, it, vi } from 'vitest';
import type { LogLine } from '@dryft/libs';
import { PubSubClient, RedisRunLines } from '../src/live/remote-run-lines';

type Listener = (message: string, channel: string) => void;

/** One fake Redis shared by replicas: channels, their subscribers, and every command in order. */
function fakeRedis() {
  const subs = new Map<string, Set<Listener>>();
  const log: string[] = [];
  /** Every message published, by channel, as sent. */
  const messages: [string, string][] = [];
  const client = (name: string) => {
    const events = new Map<string, (() => void)[]>();
    let pending: Promise<void> = Promise.resolve();
    const c = {
      isReady: true,
      /** Makes the subscribe/unsubscribe replies wait (a slow Redis). */
      slow: null as Promise<void> | null,
      async publish(channel: string, message: string) {
        log.push(`${name} PUBLISH ${channel}`);
        messages.push([channel, message]);
        for (const l of subs.get(channel) ?? []) l(message, channel);
        return subs.get(channel)?.size ?? 0;
      },
      subscribe(channel: string, listener: Listener) {
        log.push(`${name} SUBSCRIBE ${channel}`);
        pending = pending.then(async () => {
          if (c.slow) await c.slow;
          if (!subs.has(channel)) subs.set(channel, new Set());
          subs.get(channel)!.add(listener);
        });
        return pending;
      },
      unsubscribe(channel: string, listener?: Listener) {
        log.push(`${name} UNSUBSCRIBE ${channel}`);
        pending = pending.then(() => {
          if (listener) subs.get(channel)?.delete(listener);
        });
        return pending;
      },
      on(event: string, listener: () => void) {
        events.set(event, [...(events.get(event) ?? []), listener]);
      },
      fire(event: string) {
        for (const l of events.get(event) ?? []) l();
      },
    };
    return c;
  };
  return { client, log, messages, subscribers: (channel: string) => subs.get(channel)?.size ?? 0 };
}

const line = (seq: number): LogLine => ({ seq, ts: seq, stream: 'out', text: `line ${seq}` });

function replica(redis: ReturnType<typeof fakeRedis>, name: string) {
  const publisher = redis.client(`${name}.pub`);
  const subscriber = redis.client(`${name}.sub`);
  const remote = new RedisRunLines(
    () => ({ publisher: publisher as PubSubClient, subscriber: subscriber as PubSubClient }),
    'hub',
    name,
  );
  const got: { runId: string; seqs: number[]; upTo?: number }[] = [];
  remote.onLines((runId, lines, storedUpTo) =>
    got.push({ runId, seqs: lines.map((l) => l.seq), ...(lines.length ? {} : { upTo: storedUpTo }) }),
  );
  return { remote, publisher, subscriber, got };
}

describe('RedisRunLines: one channel per run, listened to only while watched', () => {
  it('a replica gets the lines of the runs it watches, never those of others nor its own', async () => {
    const redis = fakeRedis();
    const a = replica(redis, 'a');
    const b = replica(redis, 'b');
    await b.remote.watch('r1');
    await a.remote.watch('r1');
    a.remote.publish('r1', [line(1), line(2)]);
    a.remote.publish('r2', [line(1)]); // nobody watches r2: published, decoded by none
    await new Promise((r) => setImmediate(r));
    expect(b.got).toEqual([{ runId: 'r1', seqs: [1, 2] }]);
    expect(a.got).toEqual([]); // its own batch: skipped undecoded
    expect(b.remote.received).toEqual({ batches: 1, lines: 2, markers: 0 });
    expect(redis.subscribers('hub:runlog:r2')).toBe(0);
  });

  it('after a batch no other replica heard, the run goes out as markers (the seq stored up to) until one is heard', async () => {
    const redis = fakeRedis();
    const a = replica(redis, 'a');
    const b = replica(redis, 'b');
    const sent = () => redis.messages.map(([, m]) => m.slice(m.indexOf('\n') + 1));
    a.remote.publish('r1', [line(1), line(2)]); // nobody listens: it still goes out as lines
    await Promise.resolve();
    a.remote.publish('r1', [line(3)]);
    a.remote.publish('r1', [line(4), line(5)]);
    await Promise.resolve();
    expect(sent()).toEqual([JSON.stringify([line(1), line(2)]), '3', '5']);
    expect(a.remote.sent).toEqual({ batches: 1, markers: 2 });

    // B begins to listen: the next marker reaches it (it reads the lines from its database), and
    // having been heard, the run's batches go out as lines again.
    await b.remote.watch('r1');
    a.remote.publish('r1', [line(6)]);
    await Promise.resolve();
    a.remote.publish('r1', [line(7), line(8)]);
    await Promise.resolve();
    expect(b.got).toEqual([
      { runId: 'r1', seqs: [], upTo: 6 },
      { runId: 'r1', seqs: [7, 8] },
    ]);
    expect(b.remote.received).toEqual({ batches: 1, lines: 2, markers: 1 });

    // B leaves: one more batch as lines (heard by nobody), then markers again.
    await b.remote.unwatch('r1');
    a.remote.publish('r1', [line(9)]);
    await Promise.resolve();
    a.remote.publish('r1', [line(10)]);
    await Promise.resolve();
    expect(sent().slice(-2)).toEqual([JSON.stringify([line(9)]), '10']);
    // Another run is its own: its first batch goes out as lines.
    a.remote.publish('r2', [line(1)]);
    expect(sent().at(-1)).toBe(JSON.stringify([line(1)]));
  });

  it("a replica's own subscription to a run it watches does not count as another replica hearing it", async () => {
    const redis = fakeRedis();
    const a = replica(redis, 'a');
    const b = replica(redis, 'b');
    await a.remote.watch('r1'); // A's own watchers: A listens for lines stored elsewhere
    a.remote.publish('r1', [line(1)]);
    await Promise.resolve();
    a.remote.publish('r1', [line(2)]);
    await Promise.resolve();
    expect(a.remote.sent).toEqual({ batches: 1, markers: 1 });
    await b.remote.watch('r1');
    a.remote.publish('r1', [line(3)]);
    await Promise.resolve();
    a.remote.publish('r1', [line(4)]);
    await Promise.resolve();
    expect(a.remote.sent).toEqual({ batches: 2, markers: 2 });
    expect(b.got).toEqual([
      { runId: 'r1', seqs: [], upTo: 3 },
      { runId: 'r1', seqs: [4] },
    ]);
    expect(a.got).toEqual([]); // its own messages, markers too, are skipped
  });

  it('a message that is neither lines nor a positive seq is ignored', async () => {
    const redis = fakeRedis();
    const b = replica(redis, 'b');
    await b.remote.watch('r1');
    const other = redis.client('x.pub');
    for (const body of ['0', '-3', '1.5', '"7"', '[]', '{"seq":1}', 'not json'])
      await other.publish('hub:runlog:r1', `x\n${body}`);
    expect(b.got).toEqual([]);
    expect(b.remote.received).toEqual({ batches: 0, lines: 0, markers: 0 });
  });

  it('subscribe and unsubscribe of one run apply in the order asked, even when Redis is slow', async () => {
    const redis = fakeRedis();
    const b = replica(redis, 'b');
    let release!: () => void;
    b.subscriber.slow = new Promise<void>((r) => (release = r));
    const first = b.remote.watch('r1');
    const gone = b.remote.unwatch('r1');
    const again = b.remote.watch('r1');
    release();
    await Promise.all([first, gone, again]);
    expect(redis.log).toEqual([
      'b.sub SUBSCRIBE hub:runlog:r1',
      'b.sub UNSUBSCRIBE hub:runlog:r1',
      'b.sub SUBSCRIBE hub:runlog:r1',
    ]);
    expect(redis.subscribers('hub:runlog:r1')).toBe(1);
    expect(b.remote.watching).toEqual(['r1']);
    await b.remote.unwatch('r1');
    expect(redis.subscribers('hub:runlog:r1')).toBe(0);
    expect(b.remote.watching).toEqual([]);
  });

  it('with Redis away: publish is dropped (not queued), watch does not hold the replay, a reconnect asks for a catch-up', async () => {
    const redis = fakeRedis();
    const a = replica(redis, 'a');
    const b = replica(redis, 'b');
    let caughtUp = 0;
    b.remote.onReconnected(() => caughtUp++);
    a.publisher.isReady = false;
    a.remote.publish('r1', [line(1)]);
    expect(redis.log).toEqual([]);
    b.subscriber.isReady = false;
    b.subscriber.slow = new Promise<void>(() => undefined); // never answers while down
    await b.remote.watch('r1'); // resolves at once
    b.subscriber.isReady = true;
    b.subscriber.fire('ready');
    expect(caughtUp).toBe(1);
  });

  it('the last batch of each run dropped while Redis was away is published again when the publisher is back', async () => {
    const redis = fakeRedis();
    const a = replica(redis, 'a');
    const b = replica(redis, 'b');
    await b.remote.watch('r1');
    await b.remote.watch('r2');
    const got: [string, number[]][] = [];
    b.remote.onLines((runId, lines) => got.push([runId, lines.map((l) => l.seq)]));
    a.publisher.isReady = false;
    a.remote.publish('r1', [line(1), line(2)]);
    a.remote.publish('r1', [line(3)]);
    a.remote.publish('r2', [line(1)]);
    expect(got).toEqual([]);
    a.publisher.isReady = true;
    a.publisher.fire('ready');
    await Promise.resolve();
    // Only the last batch of each run: the subscriber's gap fill reads what came before it.
    expect(got).toEqual([
      ['r1', [3]],
      ['r2', [1]],
    ]);
    // Published once: a later reconnect sends nothing again.
    a.publisher.fire('ready');
    await Promise.resolve();
    expect(got).toHaveLength(2);
  });

  it('a subscription slower than the wait lets the replay go on, and asks for a catch-up when it lands', async () => {
    vi.useFakeTimers();
    try {
      const redis = fakeRedis();
      const b = replica(redis, 'b');
      let caughtUp = 0;
      b.remote.onReconnected(() => caughtUp++);
      let release!: () => void;
      b.subscriber.slow = new Promise<void>((r) => (release = r));
      let replayed = false;
      const watching = b.remote.watch('r1').then(() => (replayed = true));
      await vi.advanceTimersByTimeAsync(2_000);
      await watching;
      expect([replayed, caughtUp]).toEqual([true, 0]);
      release();
      await vi.runAllTimersAsync();
      expect(caughtUp).toBe(1);
    } finally {
      vi.useRealTimers();
    }
  });
});
