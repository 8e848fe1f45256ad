import { describe, expect, it } from 'vitest';
import { EventBus } from '../src/common/event-bus';
import type { BenchmarksService } from '../src/benchmarks/benchmarks.service';
import type { LeaderboardsService } from '../src/leaderboards/leaderboards.service';
import { createServer } from 'node:http';
import type { LeaderboardView } from '@dryft/libs';
import type { AddressInfo } from 'node:net';
import {
  boardSnapshot,
  boardVersion,
  notModified,
  PUBLIC_CACHE_CONTROL,
  PublicSnapshots,
  sendSnapshot,
  snapshot,
} from '../src/leaderboards/public-snapshots';
import type { Config } from '../src/config/config';
import type { UserEntity } from '../src/users/user.entity';
import type { UsersRepository } from '../src/users/users.repository';
import { UsersService } from '../src/users/users.service';

/** A board service whose answer the test controls, and which counts the reads. */
function setup() {
  const state = { board: { entries: [1] } as unknown, reads: 0, hold: null as null | Promise<void> };
  const boards = {
    // Reads the board when called; answers once `hold` (if any) settles, like a slow query.
    get: async () => {
      state.reads++;
      const board = state.board;
      if (state.hold) await state.hold;
      return board;
    },
  } as unknown as LeaderboardsService;
  const benchmarks = {} as BenchmarksService;
  const bus = new EventBus();
  const snaps = new PublicSnapshots(boards, benchmarks, bus);
  snaps.onModuleInit();
  return { state, snaps, bus };
}

describe('If-None-Match', () => {
  const etag = '"abc"';
  it('matches the tag, its weak form, a list holding it, and *', () => {
    expect(notModified('"abc"', etag)).toBe(true);
    expect(notModified('W/"abc"', etag)).toBe(true);
    expect(notModified('"x", "abc"', etag)).toBe(true);
    expect(notModified('*', etag)).toBe(true);
  });
  it('does not match another tag, a bare value, or nothing', () => {
    expect(notModified('"abd"', etag)).toBe(false);
    expect(notModified('abc', etag)).toBe(false);
    expect(notModified(undefined, etag)).toBe(false);
    expect(notModified('', etag)).toBe(false);
  });
});

describe('PublicSnapshots', () => {
  it('builds a board once, serves it until a change, then builds it again', async () => {
    const { state, snaps, bus } = setup();
    const a = await snaps.leaderboard('b1');
    expect((await snaps.leaderboard('b1')).etag).toBe(a.etag);
    expect(state.reads).toBe(1);
    state.board = { entries: [1, 2] };
    bus.emit('leaderboard.changed', { benchmarkId: 'b1' });
    await Promise.resolve();
    const b = await snaps.leaderboard('b1');
    expect(state.reads).toBe(2);
    expect(b.etag).not.toBe(a.etag);
    expect(JSON.parse(b.body.toString())).toEqual({ entries: [1, 2] });
  });

  it('never keeps a build that a change overtook, and never hands it to a read after the change', async () => {
    const { state, snaps } = setup();
    let releaseEarly!: () => void;
    state.hold = new Promise<void>((r) => (releaseEarly = r));
    const early = snaps.leaderboard('b1'); // read the old board, still answering
    snaps.apply({ kind: 'board', benchmarkId: 'b1' });
    state.board = { entries: ['after'] };
    state.hold = null;
    const late = await snaps.leaderboard('b1'); // a build of its own, not the one in flight
    expect(JSON.parse(late.body.toString())).toEqual({ entries: ['after'] });
    releaseEarly();
    // the early caller gets what it read; the snapshot kept is the later one
    expect(JSON.parse((await early).body.toString())).toEqual({ entries: [1] });
    expect((await snaps.leaderboard('b1')).etag).toBe(late.etag);
    expect(state.reads).toBe(2);
  });

  it('a change to one board leaves the others; a people change drops every board', async () => {
    const { state, snaps } = setup();
    await snaps.leaderboard('b1');
    await snaps.leaderboard('b2');
    snaps.apply({ kind: 'board', benchmarkId: 'b1' });
    await snaps.leaderboard('b2');
    expect(state.reads).toBe(2);
    await snaps.leaderboard('b1');
    expect(state.reads).toBe(3);
    snaps.apply({ kind: 'people' });
    await snaps.leaderboard('b1');
    await snaps.leaderboard('b2');
    expect(state.reads).toBe(5);
  });
});

describe('what drops team pages and boards: a GitHub profile change', () => {
  const existing = {
    id: 'u1',
    githubId: '7',
    login: 'octo',
    name: 'Octo',
    avatarUrl: 'https://a/7',
  } as UserEntity;
  const users = (bus: EventBus) =>
    new UsersService(
      {
        findByGithubId: async () => existing,
        findByLogin: async () => null,
        save: async (u: Partial<UserEntity>) => u as UserEntity,
      } as unknown as UsersRepository,
      { ADMIN_LOGINS: [] } as unknown as Config,
      bus,
    );
  const changes = async (profile: { login: string; name: string | null; avatarUrl: string | null }) => {
    const bus = new EventBus();
    const seen: string[] = [];
    bus.on('user.profile_changed', ({ userId }) => void seen.push(userId));
    await users(bus).upsertFromGithub({ id: '7', ...profile });
    await new Promise((r) => setImmediate(r));
    return seen;
  };

  it('a sign-in that changes the login, name or avatar says so; one that changes nothing does not', async () => {
    expect(await changes({ login: 'octo', name: 'Octo', avatarUrl: 'https://a/7' })).toEqual([]);
    expect(await changes({ login: 'octo2', name: 'Octo', avatarUrl: 'https://a/7' })).toEqual(['u1']);
    expect(await changes({ login: 'octo', name: 'Octo Cat', avatarUrl: 'https://a/7' })).toEqual(['u1']);
    expect(await changes({ login: 'octo', name: 'Octo', avatarUrl: null })).toEqual(['u1']);
  });
});

describe('sendSnapshot', () => {
  it('answers with the headers built with the snapshot: 200 with the bytes, 304 on a match, HEAD without a body', async () => {
    const snap = snapshot({ benchmarkId: 'b1', entries: ['é'] });
    const server = createServer((req, res) => sendSnapshot(req, res, snap));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
    try {
      const full = await fetch(url);
      expect(full.status).toBe(200);
      expect(Buffer.from(await full.arrayBuffer())).toEqual(snap.body);
      expect(
        Object.fromEntries(
          ['etag', 'cache-control', 'content-type', 'content-length'].map((h) => [h, full.headers.get(h)]),
        ),
      ).toEqual({
        etag: snap.etag,
        'cache-control': PUBLIC_CACHE_CONTROL,
        'content-type': 'application/json; charset=utf-8',
        'content-length': String(snap.body.length),
      });
      const same = await fetch(url, { headers: { 'if-none-match': snap.etag } });
      expect([
        same.status,
        same.headers.get('etag'),
        same.headers.get('cache-control'),
        await same.text(),
      ]).toEqual([304, snap.etag, PUBLIC_CACHE_CONTROL, '']);
      const head = await fetch(url, { method: 'HEAD' });
      expect([head.status, head.headers.get('content-length'), await head.text()]).toEqual([
        200,
        String(snap.body.length),
        '',
      ]);
    } finally {
      server.close();
    }
  });
});

describe('boardVersion', () => {
  it('is the same for the same board built at another time (another replica), and differs with the entries', () => {
    const board = (updatedAt: string, score: number) =>
      boardSnapshot({
        benchmarkId: 'b1',
        rulesVersion: 1,
        ranks: 'teams' as const,
        entries: [{ rank: 1, name: 'A', teamSlug: 'a', userLogin: null, score }],
        updatedAt,
      } as unknown as LeaderboardView);
    const a = board('2026-01-01T00:00:00Z', 1);
    const b = board('2026-01-01T00:00:05Z', 1);
    // Built at two instants (two replicas): one weak ETag, so either copy revalidates against the other.
    expect(a.etag).toBe(b.etag);
    expect(a.etag).toMatch(/^W\/"/);
    expect(board('2026-01-01T00:00:00Z', 2).etag).not.toBe(a.etag);
    expect(a.body.equals(b.body)).toBe(false);
    expect(boardVersion(a)).toBe(boardVersion(b));
    expect(boardVersion(board('2026-01-01T00:00:00Z', 2))).not.toBe(boardVersion(a));
  });
});
