import { createServer, type Server as HttpServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Server } from 'socket.io';
import { afterEach, describe, expect, it } from 'vitest';
import type { LogLine } from '@dryft/libs';
import { ApiClient } from '../src/http';
import { CliError, EXIT } from '../src/errors';
import { LogFollower, type FollowOptions } from '../src/live';
import { runView, TOKEN } from './helpers';

const RUN = runView().id as string;

/**
 * A stand-in hub with the `/live` contract and the REST log: the test appends lines, breaks the
 * connection and finishes the run, and the follower must print every line exactly once, in order.
 */
async function fakeHub(opts: { live?: boolean; refuse?: { code: string; message: string } } = {}) {
  const lines: LogLine[] = [];
  let status: 'running' | 'succeeded' = 'running';
  const joins: number[] = [];
  const http: HttpServer = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    if (req.headers.authorization !== `Bearer ${TOKEN}`) return void res.writeHead(401).end();
    if (url.pathname === `/api/runs/${RUN}/logs`) {
      const after = Number(url.searchParams.get('after') ?? 0);
      const limit = Number(url.searchParams.get('limit') ?? 1000);
      const items = lines.filter((l) => l.seq > after).slice(0, limit);
      const nextAfter = items.length ? items[items.length - 1].seq : after;
      res.writeHead(200, { 'content-type': 'application/json' });
      return void res.end(
        JSON.stringify({ items, nextAfter, complete: status !== 'running' && nextAfter >= lines.length }),
      );
    }
    if (url.pathname === `/api/runs/${RUN}`) {
      res.writeHead(200, { 'content-type': 'application/json' });
      return void res.end(JSON.stringify(runView({ status, lastLogSeq: lines.length })));
    }
    res.writeHead(404).end();
  });
  const io = new Server(http);
  if (opts.live !== false) {
    const live = io.of('/live');
    live.use((socket, next) =>
      socket.handshake.auth?.token === TOKEN ? next() : next(new Error('unauthorized')),
    );
    live.on('connection', (socket) => {
      socket.on('run.join', (body: { runId: string; afterSeq: number }, ack: (a: unknown) => void) => {
        joins.push(body.afterSeq);
        if (opts.refuse) return ack({ ok: false, error: opts.refuse });
        void socket.join(`run:${body.runId}`);
        ack({ ok: true, run: runView({ status, lastLogSeq: lines.length }) });
        // Replay, plus a duplicate of the line just before the cursor, to be dropped.
        const replay = lines.filter((l) => l.seq >= Math.max(1, body.afterSeq));
        if (replay.length) socket.emit('run.log', { runId: body.runId, lines: replay });
      });
    });
  }
  await new Promise<void>((r) => http.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(http.address() as AddressInfo).port}`;
  const room = () => io.of('/live').to(`run:${RUN}`);
  return {
    url,
    joins,
    /** Stores lines; broadcasts them unless `silent` (as if the socket missed them). */
    append(n: number, silent = false, skipBroadcastOf: number[] = []) {
      const fresh: LogLine[] = [];
      for (let i = 0; i < n; i++) {
        const seq = lines.length + 1;
        const line: LogLine = { seq, ts: Date.now(), stream: 'out', text: `line ${seq}` };
        lines.push(line);
        fresh.push(line);
      }
      const sent = fresh.filter((l) => !skipBroadcastOf.includes(l.seq));
      if (!silent && sent.length) room().emit('run.log', { runId: RUN, lines: sent });
    },
    finish() {
      status = 'succeeded';
      if (opts.live !== false)
        room().emit('run.status', { run: runView({ status, lastLogSeq: lines.length }) });
    },
    /** A `run.sample` event of this run and one of another run, to the room. */
    sample(index: number) {
      const sample = {
        workload: 'w',
        index,
        warmup: false,
        ttftMs: 1,
        tpotMs: 0.5,
        tps: 100,
        totalMs: 5,
        tokens: 16,
      };
      room().emit('run.sample', { runId: 'another-run', sample: { ...sample, index: -1 } });
      room().emit('run.sample', { runId: RUN, sample });
    },
    dropTransport() {
      for (const s of io.of('/live').sockets.values()) s.conn.close();
    },
    kick() {
      io.of('/live').disconnectSockets(true);
    },
    /** What the hub does when the token is revoked: out of the room, then told why. */
    revoke() {
      for (const s of io.of('/live').sockets.values()) {
        void s.leave(`run:${RUN}`);
        s.emit('access.revoked', {
          reason: 'token_revoked',
          message: 'The API token this connection used was revoked.',
          teamId: null,
          rooms: [`run:${RUN}`],
          runIds: [RUN],
        });
      }
    },
    close: () =>
      new Promise<void>((r) => {
        io.close();
        http.closeAllConnections();
        http.close(() => r());
      }),
  };
}

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  while (closers.length) await closers.pop()!();
});

const until = async (cond: () => boolean, ms = 5000) => {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error('timed out waiting');
    await new Promise((r) => setTimeout(r, 10));
  }
};

type Hub = Awaited<ReturnType<typeof fakeHub>>;
const followerOf = (hub: Hub, o: Omit<FollowOptions, 'api' | 'token' | 'runId'>) =>
  new LogFollower({ api: new ApiClient(hub.url, TOKEN, 'test', 10), token: TOKEN, runId: RUN, ...o });

describe('LogFollower', () => {
  it('prints every line once, in order, across duplicates, a gap, a dropped transport and a server kick', async () => {
    const hub = await fakeHub();
    closers.push(hub.close);
    hub.append(5); // before the follower joins: comes by replay
    const printed: number[] = [];
    const follower = followerOf(hub, {
      pollMs: 50,
      onLine: (l) => printed.push(l.seq),
    });
    const done = follower.run();
    await until(() => printed.length === 5);
    hub.append(3);
    hub.append(4, false, [10]); // line 10 never broadcast: a gap that REST must fill
    await until(() => printed.length === 12);
    hub.dropTransport();
    hub.append(6, true); // while disconnected: nobody hears these
    await until(() => printed.length === 18);
    hub.kick(); // "io server disconnect": socket.io does not reconnect on its own
    hub.append(7, true);
    await until(() => printed.length === 25, 8000);
    hub.append(2);
    hub.finish();
    const run = await done;
    expect(run.status).toBe('succeeded');
    expect(printed).toEqual(Array.from({ length: 27 }, (_, i) => i + 1));
  });

  it("passes on the run's sample events as they arrive (onSample), not another run's", async () => {
    const hub = await fakeHub();
    closers.push(hub.close);
    hub.append(1);
    const printed: number[] = [];
    const samples: number[] = [];
    const done = followerOf(hub, {
      pollMs: 50,
      onLine: (l) => printed.push(l.seq),
      onSample: (s) => samples.push(s.index),
    }).run();
    await until(() => printed.length === 1 && hub.joins.length === 1); // in the run's room
    hub.sample(0);
    hub.sample(1);
    await until(() => samples.length === 2);
    hub.finish();
    await done;
    expect(samples).toEqual([0, 1]);
  });

  it('rejoins with afterSeq = the last printed line after each reconnect (REST only fills gaps)', async () => {
    const hub = await fakeHub();
    closers.push(hub.close);
    hub.append(5);
    const printed: number[] = [];
    const follower = followerOf(hub, {
      pollMs: 60_000, // the REST safety net stays out of the way: the socket does the work
      onLine: (l) => printed.push(l.seq),
    });
    const done = follower.run();
    await until(() => printed.length === 5);
    await until(() => hub.joins.length === 1);
    hub.append(4, false, [7]); // gap: 7 is never broadcast
    await until(() => printed.length === 9);
    hub.dropTransport();
    hub.append(3, true);
    await until(() => hub.joins.length === 2 && printed.length === 12);
    hub.kick();
    hub.append(2, true);
    await until(() => hub.joins.length === 3 && printed.length === 14);
    hub.finish();
    await done;
    expect(printed).toEqual(Array.from({ length: 14 }, (_, i) => i + 1));
    // Each rejoin asks only for what came after the last printed line (REST may have read ahead).
    expect(hub.joins).toHaveLength(3);
    expect(hub.joins[1]).toBeGreaterThanOrEqual(9);
    expect(hub.joins[2]).toBeGreaterThanOrEqual(12);
    expect(follower.stats.gapsFilled).toBe(1);
    expect(follower.stats.duplicates).toBeGreaterThanOrEqual(2);
  });

  it('stops with the reason (exit 3) when the hub revokes its access, instead of retrying', async () => {
    const hub = await fakeHub();
    closers.push(hub.close);
    hub.append(4);
    const printed: number[] = [];
    const follower = followerOf(hub, {
      pollMs: 60_000,
      onLine: (l) => printed.push(l.seq),
    });
    const done = follower.run();
    await until(() => printed.length === 4 && hub.joins.length === 1);
    hub.revoke();
    const err = (await done.catch((e: unknown) => e)) as CliError;
    expect(err).toBeInstanceOf(CliError);
    expect(err.exitCode).toBe(EXIT.auth);
    expect(err.code).toBe('token_revoked');
    expect(err.message).toMatch(/was revoked.*after line 4/);
  });

  it('a refused join stops with the hub message: exit 3 for access, exit 2 for an unknown run', async () => {
    const follow = async (refuse: { code: string; message: string }) => {
      const hub = await fakeHub({ refuse });
      closers.push(hub.close);
      const follower = followerOf(hub, {
        pollMs: 60_000,
        onLine: () => undefined,
      });
      return (await follower.run().catch((e: unknown) => e)) as CliError;
    };
    const auth = await follow({ code: 'sign_in_required', message: 'Sign in to follow runs.' });
    expect(auth).toBeInstanceOf(CliError);
    expect(auth.exitCode).toBe(EXIT.auth);
    expect(auth.message).toBe(`Cannot follow run ${RUN}: Sign in to follow runs.`);
    const missing = await follow({ code: 'run_not_found', message: `No run ${RUN} in your team` });
    expect(missing.exitCode).toBe(EXIT.badInput);
    expect(missing.message).toBe(
      `Run ${RUN} was not found: No run ${RUN} in your team. Copy the full Run ID from the run page.`,
    );
  });

  it('a join refused for another reason is said once, and the log is read over REST', async () => {
    const hub = await fakeHub({ refuse: { code: 'database_unavailable', message: 'The database is down.' } });
    closers.push(hub.close);
    hub.append(3);
    const printed: number[] = [];
    const notices: string[] = [];
    const follower = followerOf(hub, {
      pollMs: 30,
      onLine: (l) => printed.push(l.seq),
      onNotice: (m) => notices.push(m),
    });
    const done = follower.run();
    // The refusal, not only the lines: the lines may come over REST before the socket's join is
    // answered, and a run that ended first is followed to its end with nothing to say.
    await until(() => printed.length === 3 && notices.length > 0);
    hub.append(2);
    hub.finish();
    await done;
    expect(printed).toEqual([1, 2, 3, 4, 5]);
    expect(notices).toEqual([
      'Live log refused (database_unavailable: The database is down.); following over REST instead.',
    ]);
  });

  it('falls back to REST paging when the hub has no /live namespace', async () => {
    const hub = await fakeHub({ live: false });
    closers.push(hub.close);
    hub.append(3);
    const printed: number[] = [];
    const follower = followerOf(hub, {
      pollMs: 30,
      onLine: (l) => printed.push(l.seq),
    });
    const done = follower.run();
    await until(() => printed.length === 3);
    hub.append(4);
    hub.finish();
    await done;
    expect(printed).toEqual([1, 2, 3, 4, 5, 6, 7]);
    expect(follower.stats.socketLines).toBe(0);
  });

  it('starts after --after and ends at once for a finished run', async () => {
    const hub = await fakeHub();
    closers.push(hub.close);
    hub.append(10);
    hub.finish();
    const printed: number[] = [];
    const follower = followerOf(hub, {
      afterSeq: 6,
      pollMs: 50,
      onLine: (l) => printed.push(l.seq),
    });
    await follower.run();
    expect(printed).toEqual([7, 8, 9, 10]);
  });
});
