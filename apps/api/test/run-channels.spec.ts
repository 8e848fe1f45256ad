import { describe, expect, it } from 'vitest';
import type { LogLine } from '@dryft/libs';
import type { LiveNamespace as Namespace, LiveSocket as Socket } from '../src/socket/socket-server';
import { RunChannels, RemoteWatch } from '../src/live/run-channels';

const RUN = 'run-1';
const line = (seq: number): LogLine => ({ seq, ts: seq, stream: 'out', text: `line ${seq}` });

/** A stored log, a local room registry and watchers that record the seqs they receive. */
function world(remote?: RemoteWatch) {
  const stored: LogLine[] = [];
  const rooms = new Map<string, Set<FakeSocket>>();
  let reads = 0;
  let gate: Promise<void> | null = null;
  class FakeSocket {
    connected = true;
    readonly seqs: number[] = [];
    constructor(readonly id: string) {}
    emit(_event: string, payload: { lines: LogLine[] }) {
      this.seqs.push(...payload.lines.map((l) => l.seq));
    }
    async join(room: string) {
      if (!rooms.has(room)) rooms.set(room, new Set());
      rooms.get(room)!.add(this);
    }
    async leave(room: string) {
      rooms.get(room)?.delete(this);
    }
  }
  const nsp = {
    local: {
      to: (room: string) => ({
        emit: (event: string, payload: { lines: LogLine[] }) => {
          for (const s of rooms.get(room) ?? []) s.emit(event, payload);
        },
      }),
    },
  } as unknown as Namespace;
  const read = async (_runId: string, after: number, limit: number) => {
    reads++;
    if (gate) await gate;
    return stored.filter((l) => l.seq > after).slice(0, limit);
  };
  const channels = new RunChannels(() => nsp, read, remote);
  const store = (...seqs: number[]) => {
    const lines = seqs.map(line);
    stored.push(...lines);
    return lines;
  };
  return {
    channels,
    store,
    socket: (id: string) => new FakeSocket(id) as FakeSocket & Socket,
    reads: () => reads,
    hold: () => {
      let open!: () => void;
      gate = new Promise<void>((r) => (open = r));
      return () => {
        gate = null;
        open();
      };
    },
  };
}

const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i);

describe('RunChannels: every line once, in order', () => {
  it('replays the stored lines after afterSeq, then the live ones, dropping duplicates', async () => {
    const w = world();
    w.store(1, 2, 3, 4);
    const a = w.socket('a');
    await w.channels.join(a, RUN, 1);
    expect(a.seqs).toEqual([2, 3, 4]);
    await w.channels.deliver(RUN, w.store(5, 6));
    await w.channels.deliver(RUN, [line(5), line(6)]); // the same batch again (another replica's echo)
    expect(a.seqs).toEqual([2, 3, 4, 5, 6]);
  });

  it('fills a gap before a live batch from the database first', async () => {
    const w = world();
    w.store(1);
    const a = w.socket('a');
    await w.channels.join(a, RUN, 0);
    w.store(2, 3); // their live event never reached this replica
    await w.channels.deliver(RUN, w.store(4));
    expect(a.seqs).toEqual([1, 2, 3, 4]);
  });

  it('a marker from another replica (no lines, the seq stored up to) is filled from the database, once', async () => {
    const w = world();
    w.store(1);
    const a = w.socket('a');
    await w.channels.join(a, RUN, 0);
    w.store(2, 3, 4); // stored elsewhere, sent as a marker only
    const reads = w.reads();
    await w.channels.deliver(RUN, [], 3);
    expect(a.seqs).toEqual([1, 2, 3]); // up to the marker, not past it
    await w.channels.deliver(RUN, [], 3); // the same marker again: nothing to read
    await w.channels.deliver(RUN, [], 2);
    expect(w.reads()).toBe(reads + 1);
    await w.channels.deliver(RUN, [line(4)]);
    await w.channels.deliver(RUN, w.store(5));
    expect(a.seqs).toEqual(range(1, 5));
    expect(w.reads()).toBe(reads + 1);
  });

  it('brings a late joiner and the members to the same point with nothing twice', async () => {
    const w = world();
    const a = w.socket('a');
    await w.channels.join(a, RUN, 0);
    await w.channels.deliver(RUN, w.store(1, 2));
    w.store(3, 4); // stored, live event still on its way
    const b = w.socket('b');
    await w.channels.join(b, RUN, 0);
    await w.channels.deliver(RUN, [line(3), line(4)]);
    await w.channels.deliver(RUN, w.store(5));
    expect(a.seqs).toEqual(range(1, 5));
    expect(b.seqs).toEqual(range(1, 5));
  });

  it('holds live batches while a replay runs, so none slips between stored and live lines', async () => {
    const w = world();
    w.store(...range(1, 3));
    const open = w.hold();
    const a = w.socket('a');
    const joined = w.channels.join(a, RUN, 0);
    const delivered = w.channels.deliver(RUN, w.store(4));
    // deliver() is a no-op until someone watches: the channel exists because of the pending join.
    expect(w.channels.watched(RUN)).toBe(true);
    open();
    await joined;
    await delivered;
    await w.channels.deliver(RUN, w.store(5));
    expect(a.seqs).toEqual(range(1, 5));
  });

  it('stops a watcher that lost access, and forgets a run nobody watches', async () => {
    const w = world();
    w.store(1);
    const a = w.socket('a');
    let allowed = true;
    await w.channels.join(a, RUN, 0, () => allowed);
    allowed = false;
    w.channels.evict(a, RUN);
    await w.channels.deliver(RUN, w.store(2));
    expect(a.seqs).toEqual([1]);
    expect(w.channels.watched(RUN)).toBe(false);
  });

  it('sends nothing to a socket that disconnected during its replay', async () => {
    const w = world();
    w.store(1, 2);
    const a = w.socket('a');
    a.connected = false;
    await w.channels.join(a, RUN, 0);
    expect(a.seqs).toEqual([]);
    expect(w.reads()).toBe(0);
  });
});

/** A RemoteWatch that records its calls; `hold()` keeps the next subscriptions pending. */
function remoteLog() {
  const calls: string[] = [];
  let gate: Promise<void> | null = null;
  const remote: RemoteWatch = {
    watch: async (runId) => {
      calls.push(`watch ${runId}`);
      if (gate) await gate;
      calls.push(`subscribed ${runId}`);
    },
    unwatch: async (runId) => {
      calls.push(`unwatch ${runId}`);
    },
  };
  return {
    remote,
    calls,
    hold: () => {
      let open!: () => void;
      gate = new Promise<void>((r) => (open = r));
      return () => {
        gate = null;
        open();
      };
    },
  };
}

describe("RunChannels: other replicas' lines only for runs watched here", () => {
  it('subscribes once, when the first watcher joins and before its replay reads; unsubscribes when the last leaves', async () => {
    const r = remoteLog();
    const w = world(r.remote);
    w.store(1, 2);
    const open = r.hold();
    const a = w.socket('a');
    const joined = w.channels.join(a, RUN, 0);
    await new Promise((res) => setImmediate(res));
    // The replay waits for the subscription: a line published meanwhile is either read or delivered.
    expect(r.calls).toEqual([`watch ${RUN}`]);
    expect(w.reads()).toBe(0);
    open();
    await joined;
    expect(a.seqs).toEqual([1, 2]);
    const b = w.socket('b');
    await w.channels.join(b, RUN, 0);
    expect(r.calls).toEqual([`watch ${RUN}`, `subscribed ${RUN}`]);
    await w.channels.leave(a, RUN);
    expect(r.calls).toHaveLength(2);
    await w.channels.leave(b, RUN);
    expect(r.calls).toEqual([`watch ${RUN}`, `subscribed ${RUN}`, `unwatch ${RUN}`]);
    // Watched again later: subscribed again.
    await w.channels.join(a, RUN, 2);
    expect(r.calls.slice(3)).toEqual([`watch ${RUN}`, `subscribed ${RUN}`]);
  });

  it('a watcher that disconnects or loses access ends the subscription; another run is not touched', async () => {
    const r = remoteLog();
    const w = world(r.remote);
    const a = w.socket('a');
    const b = w.socket('b');
    await w.channels.join(a, RUN, 0);
    await w.channels.join(b, 'run-2', 0);
    w.channels.forget(a);
    await w.channels.deliver(RUN, []); // let the queued leave run
    await new Promise((res) => setImmediate(res));
    expect(r.calls).toContain(`unwatch ${RUN}`);
    expect(r.calls).not.toContain('unwatch run-2');
    w.channels.evict(b, 'run-2');
    await new Promise((res) => setImmediate(res));
    expect(r.calls).toContain('unwatch run-2');
    expect(w.channels.watched(RUN) || w.channels.watched('run-2')).toBe(false);
  });

  it('after an outage of the link, catchUp sends what was stored meanwhile, once', async () => {
    const w = world();
    const a = w.socket('a');
    await w.channels.join(a, RUN, 0);
    await w.channels.deliver(RUN, w.store(1, 2));
    w.store(3, 4, 5); // published while Redis was down: never arrives
    await w.channels.catchUp();
    await w.channels.deliver(RUN, [line(5)]); // a late copy
    await w.channels.deliver(RUN, w.store(6));
    expect(a.seqs).toEqual(range(1, 6));
  });
});
