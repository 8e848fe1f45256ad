import { Injectable, OnModuleDestroy, OnModuleInit } from '@nestjs/common';
import { createHash } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { LeaderboardView, PublicBenchmark, TeamPageView } from '@dryft/libs';
import { BenchmarksService } from '../benchmarks/benchmarks.service';
import { EventBus } from '../common/event-bus';
import { LeaderboardsService } from './leaderboards.service';

/**
 * Matches the public pages' 10-second refresh. No stale-while-revalidate: revalidating is a 304
 * answered from memory, so letting a cache serve a stale copy longer would save the hub nothing.
 */
export const PUBLIC_CACHE_CONTROL = 'public, max-age=10';

/** One public view, serialized once: every read until the next change sends these bytes. */
export interface Snapshot<T = unknown> {
  view: T;
  body: Buffer;
  /** Strong, a hash of the exact bytes; for a board, weak over its content (see {@link boardSnapshot}). */
  etag: string;
  /** The response headers of a 200 and of a 304, built once with the bytes (name, value, …). */
  headers: { full: string[]; notModified: string[] };
}

/**
 * What changed, as said to this replica's snapshots and to every other replica's: a board (a new
 * best, a disqualification), a benchmark's settings, its rules version, or the people that boards
 * and team pages name (a team's members, a user's profile).
 */
export type PublicChange =
  | { kind: 'board'; benchmarkId: string }
  | { kind: 'settings'; benchmarkId: string }
  | { kind: 'rules'; benchmarkId: string }
  | { kind: 'people' };

export function isPublicChange(c: unknown): c is PublicChange {
  const x = c as { kind?: unknown; benchmarkId?: unknown } | null;
  if (!x || typeof x !== 'object') return false;
  if (x.kind === 'people') return true;
  return (
    (x.kind === 'board' || x.kind === 'settings' || x.kind === 'rules') && typeof x.benchmarkId === 'string'
  );
}

const sha1 = (data: string | Buffer): string => createHash('sha1').update(data).digest('base64url');

/** One public view, serialized once; its ETag strong over the bytes unless one is given. */
export function snapshot<T>(view: T, etag?: string): Snapshot<T> {
  const body = Buffer.from(JSON.stringify(view));
  etag ??= `"${sha1(body)}"`;
  const notModified = ['ETag', etag, 'Cache-Control', PUBLIC_CACHE_CONTROL];
  const full = [
    ...notModified,
    'Content-Type',
    'application/json; charset=utf-8',
    'Content-Length',
    String(body.length),
  ];
  return { view, body, etag, headers: { full, notModified } };
}

/**
 * A board's snapshot. A board carries the instant it was built (`updatedAt`), and two replicas build
 * the same board at different instants: its ETag is weak, a hash of the board without that instant,
 * so a copy from one replica revalidates (304) against the other. The same hash is the board's live
 * version ({@link boardVersion}).
 */
export function boardSnapshot(view: LeaderboardView): Snapshot<LeaderboardView> {
  const { updatedAt: _built, ...content } = view;
  return snapshot(view, `W/"${sha1(JSON.stringify(content))}"`);
}

/**
 * A board's live version (`leaderboard.diff` from / to): the hash in its weak ETag, so every replica
 * gives the same board the same version and a diff broadcast by one applies to a board joined on
 * another.
 */
export function boardVersion(snap: Snapshot<LeaderboardView>): string {
  return snap.etag.slice(3, -1);
}

/** If-None-Match matches when any listed tag (weak comparison, RFC 9110 §13.1.2) or `*` is ours. */
export function notModified(ifNoneMatch: string | string[] | undefined, etag: string): boolean {
  if (!ifNoneMatch) return false;
  const header = Array.isArray(ifNoneMatch) ? ifNoneMatch.join(',') : ifNoneMatch;
  const ours = etag.replace(/^W\//, '');
  return header.split(',').some((t) => {
    const tag = t.trim();
    return tag === '*' || tag.replace(/^W\//, '') === ours;
  });
}

/**
 * Sends a snapshot (or 304), with its ETag and the public Cache-Control; HEAD gets the headers only.
 * The headers were built with the snapshot: a read computes none of them.
 */
export function sendSnapshot(req: IncomingMessage, res: ServerResponse, snap: Snapshot): void {
  if (notModified(req.headers['if-none-match'], snap.etag)) {
    res.writeHead(304, snap.headers.notModified);
    res.end();
    return;
  }
  res.writeHead(200, snap.headers.full);
  res.end(req.method === 'HEAD' ? undefined : snap.body);
}

/** Path segments the fast path serves as they are; anything percent-encoded takes the full route. */
const PLAIN = /^[A-Za-z0-9._~-]+$/;

/**
 * The public reads (leaderboards, benchmark definitions, team pages), each kept in memory as one
 * serialized snapshot until the data behind it changes: a board per benchmark (under its current
 * rules version), the benchmark list and each definition, each team page. The events that drive the
 * live `leaderboard.update` drop the snapshots they touch at once (a read after the event never sees
 * the old data), and with several replicas every other replica drops its own (`crossReplica`). A
 * build that was already running when a change came is served to its own callers but never kept.
 */
@Injectable()
export class PublicSnapshots implements OnModuleInit, OnModuleDestroy {
  /** Bumped by every change: a build started under an older epoch is not kept. */
  private epoch = 0;
  private readonly entries = new Map<string, Snapshot>();
  private readonly building = new Map<string, { epoch: number; promise: Promise<Snapshot> }>();
  private readonly unsubscribe: (() => void)[] = [];
  private remote?: (change: PublicChange) => void;

  constructor(
    private readonly boards: LeaderboardsService,
    private readonly benchmarks: BenchmarksService,
    private readonly bus: EventBus,
  ) {}

  onModuleInit(): void {
    const local = (change: PublicChange) => {
      this.apply(change);
      this.remote?.(change);
    };
    this.unsubscribe.push(
      this.bus.on('leaderboard.changed', ({ benchmarkId }) => local({ kind: 'board', benchmarkId })),
      this.bus.on('benchmark.settings_changed', ({ benchmarkId }) =>
        local({ kind: 'settings', benchmarkId }),
      ),
      this.bus.on('benchmark.rules_changed', ({ benchmarkId }) => local({ kind: 'rules', benchmarkId })),
      // The benchmark view's calibration summary.
      this.bus.on('benchmark.calibrated', ({ benchmarkId }) => local({ kind: 'settings', benchmarkId })),
      this.bus.on('team.member_left', () => local({ kind: 'people' })),
      this.bus.on('team.member_removed', () => local({ kind: 'people' })),
      this.bus.on('team.member_joined', () => local({ kind: 'people' })),
      this.bus.on('user.profile_changed', () => local({ kind: 'people' })),
    );
  }

  onModuleDestroy(): void {
    for (const u of this.unsubscribe) u();
  }

  /** Tells other replicas of each change made here (the live gateway wires this to serverSideEmit). */
  crossReplica(send: (change: PublicChange) => void): void {
    this.remote = send;
  }

  /** Drops every snapshot `change` touches; the next read (or the live broadcast) rebuilds it. */
  apply(change: PublicChange): void {
    this.epoch++;
    const drop = (test: (key: string) => boolean) => {
      for (const key of [...this.entries.keys()]) if (test(key)) this.entries.delete(key);
    };
    switch (change.kind) {
      case 'board':
        drop(
          (k) =>
            k === `board:${change.benchmarkId}` ||
            k === `final:${change.benchmarkId}` ||
            k.startsWith('team:'),
        );
        break;
      case 'settings':
        drop((k) => k === 'benchmarks' || k === `benchmark:${change.benchmarkId}`);
        break;
      case 'rules':
        drop(
          (k) =>
            k === 'benchmarks' ||
            k === `benchmark:${change.benchmarkId}` ||
            k === `board:${change.benchmarkId}` ||
            k === `final:${change.benchmarkId}` ||
            k.startsWith('team:'),
        );
        break;
      case 'people':
        drop((k) => k.startsWith('board:') || k.startsWith('final:') || k.startsWith('team:'));
        break;
    }
  }

  leaderboard(benchmarkId: string): Promise<Snapshot<LeaderboardView>> {
    return this.get(`board:${benchmarkId}`, () => this.boards.get(benchmarkId), boardSnapshot);
  }

  /** The published final board (frozen as published; dropped with the live one when it changes). */
  finalBoard(benchmarkId: string): Promise<Snapshot<LeaderboardView>> {
    return this.get(`final:${benchmarkId}`, () => this.boards.finalBoard(benchmarkId), boardSnapshot);
  }

  benchmarkList(): Promise<Snapshot<PublicBenchmark[]>> {
    return this.get('benchmarks', async () => {
      const calibrations = await this.benchmarks.calibrationSummaries();
      return (await this.benchmarks.list()).map((b) =>
        this.benchmarks.toPublic(b, calibrations.get(b.id) ?? []),
      );
    });
  }

  benchmark(id: string): Promise<Snapshot<PublicBenchmark>> {
    return this.get(`benchmark:${id}`, async () => {
      const b = await this.benchmarks.get(id);
      return this.benchmarks.toPublic(b, (await this.benchmarks.calibrationSummaries()).get(b.id) ?? []);
    });
  }

  teamPage(slug: string): Promise<Snapshot<TeamPageView>> {
    return this.get(`team:${slug}`, () => this.boards.teamPage(slug));
  }

  /**
   * Answers a public GET straight from memory when its snapshot is built, before the web framework
   * sees the request; false (not handled) for anything else, which takes the full route (and builds
   * the snapshot there).
   */
  serveFromMemory(req: IncomingMessage, res: ServerResponse): boolean {
    if (req.method !== 'GET' && req.method !== 'HEAD') return false;
    const url = req.url ?? '';
    const q = url.indexOf('?');
    const parts = (q < 0 ? url : url.slice(0, q)).split('/');
    // A query string other than the board's choice takes the full route (it validates it).
    const query = q < 0 ? '' : url.slice(q + 1);
    if (query !== '' && query !== 'board=live' && query !== 'board=final') return false;
    const board = query === 'board=final' ? 'final' : 'board';
    // ['', 'api', ...]
    if (parts[0] !== '' || parts[1] !== 'api') return false;
    let key: string | null = null;
    if (parts.length === 3 && parts[2] === 'benchmarks') key = query ? null : 'benchmarks';
    else if (parts.length === 4 && PLAIN.test(parts[3])) {
      if (parts[2] === 'benchmarks') key = `benchmark:${parts[3]}`;
      else if (parts[2] === 'leaderboards') key = `${board}:${parts[3]}`;
    } else if (
      parts.length === 5 &&
      parts[2] === 'benchmarks' &&
      parts[4] === 'leaderboard' &&
      PLAIN.test(parts[3])
    )
      key = `${board}:${parts[3]}`;
    else if (parts.length === 5 && parts[2] === 'public' && parts[3] === 'teams' && PLAIN.test(parts[4]))
      key = `team:${parts[4]}`;
    const snap = key ? this.entries.get(key) : undefined;
    if (!snap) return false;
    sendSnapshot(req, res, snap);
    return true;
  }

  private get<T>(
    key: string,
    build: () => Promise<T>,
    make: (view: T) => Snapshot<T> = snapshot,
  ): Promise<Snapshot<T>> {
    const have = this.entries.get(key);
    if (have) return Promise.resolve(have as Snapshot<T>);
    const pending = this.building.get(key);
    if (pending && pending.epoch === this.epoch) return pending.promise as Promise<Snapshot<T>>;
    const epoch = this.epoch;
    const promise = build().then(
      (view) => {
        const snap = make(view);
        if (this.epoch === epoch) this.entries.set(key, snap);
        if (this.building.get(key)?.promise === promise) this.building.delete(key);
        return snap;
      },
      (err: unknown) => {
        if (this.building.get(key)?.promise === promise) this.building.delete(key);
        throw err;
      },
    );
    this.building.set(key, { epoch, promise });
    return promise;
  }
}
