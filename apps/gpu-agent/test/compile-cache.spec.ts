import type { RunAssign } from '@dryft/libs';
import {
  chmodSync,
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  symlinkSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  cacheDirOf,
  candidateCacheKey,
  compileCacheRoot,
  diskBytes,
  enforceSlotBound,
  entryDir,
  prepareCompileCache,
  removeTree,
} from '../src/compile-cache';
import type { CompileCacheKey } from '../src/compile-cache';

/** The candidate's persistent compile cache: its key, folders, rules-version wipe, bound and eviction. */
let work: string;
let root: string;
let outside: string;
let notes: string[];
beforeEach(() => {
  work = realpathSync(mkdtempSync(path.join(tmpdir(), 'dryft-cc-')));
  root = compileCacheRoot(work);
  outside = path.join(work, 'outside');
  mkdirSync(outside);
  writeFileSync(path.join(outside, 'precious'), 'the agent token');
  notes = [];
});
afterEach(() => rmSync(work, { recursive: true, force: true }));

const key = (over: Partial<CompileCacheKey> = {}): CompileCacheKey => ({
  slot: 0,
  teamId: '0b7c7a8e-1111-4222-8333-944455556666',
  benchmarkId: 'toy-decode',
  rulesVersion: 1,
  ...over,
});
const prepare = (k: CompileCacheKey, maxBytes = 1 << 30, now?: Date) =>
  prepareCompileCache({ root, key: k, maxBytes, now, note: (t) => notes.push(t) });
const fill = (dir: string, bytes: number, name = 'kernel.so') =>
  writeFileSync(path.join(dir, name), Buffer.alloc(bytes, 1));
const outsideIntact = () => {
  expect(readFileSync(path.join(outside, 'precious'), 'utf8')).toBe('the agent token');
  expect(readdirSync(outside)).toEqual(['precious']);
};

function assign(over: Partial<RunAssign> = {}, spec: Record<string, unknown> = {}): RunAssign {
  return {
    runId: 'r1',
    benchmarkId: 'toy-decode',
    mode: 'public',
    slot: 2,
    teamId: 'team-a',
    submission: { url: '/dl', sha256: 'a'.repeat(64), kind: 'archive', filename: 'submission.tar.gz' },
    spec: { kind: 'decode', rulesVersion: 3, ...spec } as RunAssign['spec'],
    deadlineAt: 0,
    ...over,
  };
}

describe('the cache key', () => {
  it('is (slot, team, benchmark, rules version) for public and official decode runs of a team', () => {
    expect(candidateCacheKey(assign())).toEqual({
      slot: 2,
      teamId: 'team-a',
      benchmarkId: 'toy-decode',
      rulesVersion: 3,
    });
    expect(candidateCacheKey(assign({ mode: 'official' }))).toMatchObject({ teamId: 'team-a' });
  });

  it('is refused to training runs, re-measures, calibrations and runs of no known team', () => {
    expect(candidateCacheKey(assign({}, { kind: 'training' }))).toEqual({
      none: expect.stringContaining('training runs compile from an empty cache'),
    });
    for (const mode of ['baseline', 'calibration'] as const)
      expect(candidateCacheKey(assign({ mode, submission: null, teamId: null }))).toHaveProperty('none');
    expect(candidateCacheKey(assign({ teamId: null }))).toHaveProperty('none');
    expect(candidateCacheKey(assign({ teamId: undefined }))).toHaveProperty('none'); // an older hub
  });

  it('gives every slot, team, benchmark and rules version a folder of its own inside the root', () => {
    const dirs = [
      key(),
      key({ slot: 1 }),
      key({ teamId: 'another-team' }),
      key({ benchmarkId: 'qwen3-4b-decode' }),
      key({ rulesVersion: 2 }),
    ].map((k) => entryDir(root, k));
    expect(new Set(dirs).size).toBe(5);
    // ids that are not of the hub's shape are hashed: nothing climbs out of the root
    for (const odd of ['../../outside', '/etc', 'a/b', '..', '.hidden'])
      expect(entryDir(root, key({ teamId: odd, benchmarkId: odd })).startsWith(root + path.sep)).toBe(true);
    expect(path.basename(entryDir(root, key({ teamId: '../x' })))).toMatch(/^h-[0-9a-f]{32}$/);
  });
});

describe('preparing the cache', () => {
  it('makes a 0700 folder of its own, and gives the same one back next run', async () => {
    const first = await prepare(key());
    expect(first.dir).toBe(cacheDirOf(entryDir(root, key())));
    const st = lstatSync(first.dir!);
    expect(st.isDirectory() && (st.mode & 0o777) === 0o700).toBe(true);
    expect(st.uid).toBe(process.getuid?.());
    fill(first.dir!, 4096);
    const second = await prepare(key());
    expect(second).toMatchObject({ dir: first.dir });
    expect(second.dir !== null && second.bytes).toBeGreaterThanOrEqual(4096);
    expect(existsSync(path.join(first.dir!, 'kernel.so'))).toBe(true);
  });

  it("deletes the benchmark's caches of other rules versions on the slot, and nothing else", async () => {
    const old = await prepare(key({ rulesVersion: 1 }));
    fill(old.dir!, 100);
    const otherSlot = await prepare(key({ slot: 1, rulesVersion: 1 }));
    const otherBench = await prepare(key({ benchmarkId: 'qwen3-4b-decode', rulesVersion: 1 }));
    notes = [];
    const now = await prepare(key({ rulesVersion: 2 }));
    expect(now.dir).toBe(cacheDirOf(entryDir(root, key({ rulesVersion: 2 }))));
    expect(existsSync(old.dir!)).toBe(false);
    expect(existsSync(path.dirname(path.dirname(old.dir!)))).toBe(false); // rules-1 of this benchmark
    expect(existsSync(otherSlot.dir!) && existsSync(otherBench.dir!)).toBe(true);
    expect(notes.join('\n')).toContain("deleted this slot's caches of toy-decode rules-1");
  });

  it("evicts the least recently used teams of the slot first, never another slot's", async () => {
    const t = (n: number) => new Date(Date.UTC(2026, 0, 1, 0, n));
    const a = await prepare(key({ teamId: 'a' }), 1 << 30, t(1));
    const b = await prepare(key({ teamId: 'b' }), 1 << 30, t(3));
    const c = await prepare(key({ teamId: 'c' }), 1 << 30, t(2));
    const far = await prepare(key({ teamId: 'a', slot: 1 }), 1 << 30, t(0));
    for (const d of [a, b, c, far]) fill(d.dir!, 64 * 1024);
    // one team too many: the slot's entries (d's still empty) less one of them
    const bound = (await diskBytes(path.join(root, 'slot-0'))) - 64 * 1024;
    notes = [];
    const d = await prepare(key({ teamId: 'd' }), bound, t(4));
    expect(d.dir).not.toBeNull();
    expect(existsSync(a.dir!)).toBe(false); // used at minute 1: the oldest
    expect(existsSync(b.dir!) && existsSync(c.dir!) && existsSync(far.dir!)).toBe(true);
    expect(notes.join('\n')).toMatch(/evicted slot-0\/toy-decode\/rules-1\/a .*least recently used/);
    // the agent's marker decides the order, not anything inside the engine's folder
    utimesSync(c.dir!, t(9), t(9));
    const tight = await enforceSlotBound({
      root,
      slot: 0,
      maxBytes:
        (await diskBytes(entryDir(root, key({ teamId: 'b' })))) +
        (await diskBytes(entryDir(root, key({ teamId: 'c' })))) +
        (await diskBytes(entryDir(root, key({ teamId: 'd' })))) -
        1,
      keep: entryDir(root, key({ teamId: 'd' })),
    });
    expect(tight.removed).toEqual([entryDir(root, key({ teamId: 'c' }))]);
  });

  it("runs with an empty cache of its own, and says why, when the team's cache alone is over the bound", async () => {
    const own = await prepare(key());
    fill(own.dir!, 256 * 1024);
    const again = await prepare(key(), 64 * 1024);
    expect(again).toEqual({ dir: null, why: expect.stringContaining("over the slot's bound") });
    expect(existsSync(entryDir(root, key()))).toBe(false);
    expect(notes.join('\n')).toContain("this team's cache alone was over the slot's bound");
    // and turned off
    expect(await prepare(key(), 0)).toEqual({ dir: null, why: 'compileCache.maxBytesPerSlot is 0' });
  });

  it('runs with an empty cache, and says why, when the folder cannot be made', async () => {
    writeFileSync(path.join(work, 'not-a-dir'), '');
    const r = await prepareCompileCache({
      root: path.join(work, 'not-a-dir', 'compile-cache'),
      key: key(),
      maxBytes: 1 << 30,
      note: () => undefined,
    });
    expect(r).toEqual({ dir: null, why: expect.stringContaining('could not be made ready') });
  });

  it("replaces a link left in the cache folder's place with a real folder, the link's target untouched", async () => {
    const own = await prepare(key());
    rmSync(own.dir!, { recursive: true });
    symlinkSync(outside, own.dir!);
    const again = await prepare(key());
    expect(lstatSync(again.dir!).isDirectory()).toBe(true);
    expect(readdirSync(again.dir!)).toEqual([]);
    outsideIntact();
  });
});

describe('what the engine left in its cache', () => {
  it('is deleted without following a link out, whatever the modes it left', async () => {
    const own = await prepare(key({ rulesVersion: 1 }));
    symlinkSync(outside, path.join(own.dir!, 'to-outside'));
    symlinkSync(path.join(outside, 'precious'), path.join(own.dir!, 'to-precious'));
    mkdirSync(path.join(own.dir!, 'locked', 'deep'), { recursive: true });
    symlinkSync('/', path.join(own.dir!, 'locked', 'deep', 'root'));
    chmodSync(path.join(own.dir!, 'locked'), 0o000);
    await prepare(key({ rulesVersion: 2 })); // the rules changed: the old cache goes
    expect(existsSync(entryDir(root, key({ rulesVersion: 1 })))).toBe(false);
    outsideIntact();
    await removeTree(root);
    expect(existsSync(root)).toBe(false);
    outsideIntact();
  });

  it('is measured without following links (a link to a large file counts as a link)', async () => {
    const own = await prepare(key());
    fill(outside, 1 << 20, 'large');
    symlinkSync(path.join(outside, 'large'), path.join(own.dir!, 'large'));
    symlinkSync(outside, path.join(own.dir!, 'dir'));
    expect(await diskBytes(own.dir!)).toBeLessThan(64 * 1024);
    fill(own.dir!, 1 << 20, 'own');
    expect(await diskBytes(own.dir!)).toBeGreaterThanOrEqual(1 << 20);
  });
});
