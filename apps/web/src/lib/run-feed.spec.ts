import { get } from 'svelte/store';
import { afterEach, describe, expect, it } from 'vitest';
import type { LogLine, LogsPage, RunFollowerTransport, RunView } from '@dryft/libs';
import { RUN_ID, runView } from '../../../../libs/test/fixtures';
import { RunFeed, type RunFeedDeps } from './run-feed';

const RUN = RUN_ID;
const run = (over: Partial<RunView> = {}) => runView({ teamId: 'team-a', ...over });
const line = (seq: number): LogLine => ({ seq, ts: seq, stream: 'out', text: `line ${seq}` });

/** The tab's socket and the API as the feed sees them. */
function fakes(first: RunView | Error = run()) {
  const listeners = new Map<string, Set<(p: unknown) => void>>();
  const stored: LogLine[] = [];
  const calls: string[] = [];
  let current = first instanceof Error ? run() : first;
  const transport: RunFollowerTransport & { connected: boolean } = {
    connected: false,
    on(event, l) {
      if (!listeners.has(event)) listeners.set(event, new Set());
      listeners.get(event)!.add(l);
      return () => void listeners.get(event)!.delete(l);
    },
    join: async () => ({ ok: true, run: current }),
    leave: () => undefined,
    logs: async (_id, after): Promise<LogsPage> => {
      const items = stored.filter((l) => l.seq > after);
      return { items, nextAfter: items.at(-1)?.seq ?? after, complete: false };
    },
    run: async () => current,
  };
  const emit = (event: string, payload?: unknown) =>
    [...(listeners.get(event) ?? [])].forEach((l) => l(payload));
  const deps: Partial<RunFeedDeps> = {
    api: async <T>(path: string): Promise<T> => {
      calls.push(path);
      if (path === `/api/runs/${RUN}`) {
        if (first instanceof Error) throw first;
        return current as T;
      }
      throw new Error('not here');
    },
    transport: () => transport,
    benchmarks: async () => [],
    frame: (cb) => {
      const t = setTimeout(cb, 1);
      return () => clearTimeout(t);
    },
    pollMs: 10,
  };
  return {
    deps,
    transport,
    stored,
    calls,
    emit,
    setRun: (r: RunView) => (current = r),
    connect() {
      transport.connected = true;
      emit('connect');
    },
    drop() {
      transport.connected = false;
      emit('disconnect', 'transport close');
    },
  };
}

const feeds: RunFeed[] = [];
afterEach(() => feeds.splice(0).forEach((f) => f.stop()));
const until = async (cond: () => boolean, ms = 3000) => {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error('timed out waiting');
    await new Promise((r) => setTimeout(r, 2));
  }
};

describe('RunFeed', () => {
  it('loads the run, then shows each live line once and bumps the log version', async () => {
    const f = fakes();
    const feed = new RunFeed(RUN, f.deps);
    feeds.push(feed);
    await feed.start();
    expect(feed.rs.run?.status).toBe('running');
    expect(get(feed.view).connected).toBe(false);
    f.connect();
    expect(get(feed.view).connected).toBe(true);
    f.emit('run.log', { runId: RUN, lines: [line(1), line(2)] });
    f.emit('run.log', { runId: RUN, lines: [line(2), line(3)] });
    await until(() => feed.buffer.length === 3);
    expect(get(feed.view).liveError).toBeNull();
    expect(feed.buffer.all().map((l) => l.seq)).toEqual([1, 2, 3]);
    await until(() => get(feed.view).logVersion === feed.buffer.version);
    expect(feed.buffer.version).toBeGreaterThan(0);
  });

  it('says why the join was refused, and shows the hub taking access away', async () => {
    const f = fakes();
    f.transport.join = async () => ({
      ok: false,
      error: { code: 'run_not_found', message: 'No run 1 in your team.' },
    });
    const feed = new RunFeed(RUN, f.deps);
    feeds.push(feed);
    await feed.start();
    f.connect();
    await until(() => get(feed.view).liveError !== null);
    expect(get(feed.view).liveError).toBe('No run 1 in your team.');
    f.emit('access.revoked', {
      reason: 'member_removed',
      message: 'You were removed from this team.',
      teamId: 'team-a',
      rooms: [],
      runIds: [],
    });
    expect(get(feed.view).revoked).toBe('You were removed from this team.');
    // No run polling either once access is gone, even with the socket down.
    f.drop();
    const calls = f.calls.length;
    await new Promise((r) => setTimeout(r, 50));
    expect(f.calls).toHaveLength(calls);
  });

  it('polls the run while the socket is down, and reads the log over REST', async () => {
    const f = fakes();
    const feed = new RunFeed(RUN, f.deps);
    feeds.push(feed);
    await feed.start();
    f.stored.push(line(1), line(2));
    f.setRun(run({ status: 'running', agentName: 'gpu-2' }));
    await until(
      () => feed.buffer.length === 2 && f.calls.filter((c) => c === `/api/runs/${RUN}`).length >= 2,
    );
    expect(feed.rs.run?.agentName).toBe('gpu-2');
  });

  it('shows the load error and follows nothing when the run cannot be read', async () => {
    const f = fakes(new Error('404'));
    const feed = new RunFeed(RUN, f.deps);
    feeds.push(feed);
    await feed.start();
    expect(get(feed.view).loadError).toBeInstanceOf(Error);
    f.connect();
    f.emit('run.log', { runId: RUN, lines: [line(1)] });
    await new Promise((r) => setTimeout(r, 20));
    expect(feed.buffer.length).toBe(0);
  });
});
