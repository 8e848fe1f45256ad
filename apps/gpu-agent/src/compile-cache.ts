import type { RunAssign } from '@dryft/libs';
import { createHash } from 'node:crypto';
import { promises as fs } from 'node:fs';
import * as path from 'node:path';

/**
 * The candidate's persistent compile cache for decode runs (issue 29): torch.compile's Inductor,
 * Triton, the CUDA JIT and XDG caches of one team's engine, kept between that team's runs of one
 * benchmark on one slot, so that its first warm-up does not recompile every kernel each run. Decode
 * warm-ups are not timed, so a warm cache saves wall time and changes no score. Training runs never
 * get one: their allowance includes compilation, and every training run starts from an empty cache
 * (issue 35, harness/harness/jail.py's COMPILE_CACHE_VARS).
 *
 * Layout under `<workDir>/compile-cache/` (never inside a run's folder, which is wiped):
 *
 *     slot-<n>/<benchmark>/rules-<rulesVersion>/<team>/cache/      the team's saved cache
 *     slot-<n>/<benchmark>/rules-<rulesVersion>/<team>/last-used   the agent's own marker (mtime)
 *
 * Only `cache/` is mounted, read-write, into the harness's sandbox, and only for that team's run;
 * the candidate itself never sees it: the harness copies it into a tmpfs of the size of the
 * engine's /tmp (`limits.workspaceBytes`), binds that into the candidate's jail alone, and saves it
 * back once the engine is gone (harness/harness/compile_cache.py), so one run cannot fill the
 * agent's disk, and links or devices the engine made are never kept. The marker that orders
 * eviction is the agent's. The trusted baseline and reference engines never get it (their caches
 * stay in their own fresh /tmp). A rules change deletes the benchmark's other `rules-*` folders on
 * that slot at its next run there. The slot's caches together stay under
 * `compileCache.maxBytesPerSlot`: least recently used teams are evicted first, before and after
 * each run.
 *
 * Nothing here follows a symbolic link (sizes and deletion use lstat, a link is unlinked, never
 * entered) and a folder's mode is restored before it is emptied, although only the trusted harness
 * writes there. No run is on the slot while the agent handles its caches before or after one (one
 * run per slot at a time, and another slot's sandbox never binds this slot's folders).
 */

export interface CompileCacheKey {
  slot: number;
  teamId: string;
  benchmarkId: string;
  rulesVersion: number;
}

export function compileCacheRoot(workDir: string): string {
  return path.join(workDir, 'compile-cache');
}

/**
 * The key of the run's candidate cache, or why it has none: decode runs with a submission of a
 * known team only (official and public).
 */
export function candidateCacheKey(assign: RunAssign): CompileCacheKey | { none: string } {
  if (assign.spec.kind !== 'decode')
    return { none: 'training runs compile from an empty cache (the allowance includes compilation)' };
  if (assign.mode !== 'public' && assign.mode !== 'official')
    return { none: 'no candidate engine in this run' };
  if (!assign.submission || !assign.teamId) return { none: 'the hub named no team for this run' };
  return {
    slot: assign.slot,
    teamId: assign.teamId,
    benchmarkId: assign.benchmarkId,
    rulesVersion: assign.spec.rulesVersion,
  };
}

/** A folder name of its own for any id: ids of the hub's own shape as they are, anything else hashed. */
function safeName(id: string): string {
  if (/^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/.test(id) && !id.includes('..')) return id;
  return `h-${createHash('sha256').update(id).digest('hex').slice(0, 32)}`;
}

export const slotDir = (root: string, slot: number) => path.join(root, `slot-${slot}`);
const benchmarkDir = (root: string, k: CompileCacheKey) =>
  path.join(slotDir(root, k.slot), safeName(k.benchmarkId));
const rulesName = (v: number) => `rules-${v}`;

/** The team's entry folder (agent-owned: its `cache/` and the `last-used` marker). */
export function entryDir(root: string, k: CompileCacheKey): string {
  return path.join(benchmarkDir(root, k), rulesName(k.rulesVersion), safeName(k.teamId));
}

/** The folder the candidate's jail binds: the compile caches themselves. */
export const cacheDirOf = (entry: string) => path.join(entry, 'cache');
const markerOf = (entry: string) => path.join(entry, 'last-used');

async function lstatOrNull(p: string) {
  try {
    return await fs.lstat(p);
  } catch {
    return null;
  }
}

/**
 * Deletes p and everything below it without following a single link: a link is unlinked, a folder
 * is made 0700 first (an engine may have left one 0000) and entered only after lstat says it is a
 * folder. Nothing outside p is touched.
 */
export async function removeTree(p: string): Promise<void> {
  const st = await lstatOrNull(p);
  if (!st) return;
  if (!st.isDirectory()) {
    await fs.unlink(p);
    return;
  }
  await fs.chmod(p, 0o700);
  for (const name of await fs.readdir(p)) await removeTree(path.join(p, name));
  await fs.rmdir(p);
}

/** The bytes p takes on disk (allocated blocks, so a sparse file counts what it holds), links not followed. */
export async function diskBytes(p: string): Promise<number> {
  const st = await lstatOrNull(p);
  if (!st) return 0;
  let total = st.blocks * 512;
  if (st.isDirectory()) {
    let names: string[] = [];
    try {
      names = await fs.readdir(p);
    } catch {
      // a folder its engine made unreadable: restore the mode to measure it
      await fs.chmod(p, 0o700).catch(() => undefined);
      names = await fs.readdir(p).catch(() => []);
    }
    for (const name of names) total += await diskBytes(path.join(p, name));
  }
  return total;
}

interface Entry {
  dir: string;
  bytes: number;
  lastUsed: number;
}

/** Every team entry of the slot (slot-<n>/<benchmark>/rules-<v>/<team>), with its size and last use. */
async function slotEntries(root: string, slot: number): Promise<Entry[]> {
  const out: Entry[] = [];
  const real = async (p: string) => (await lstatOrNull(p))?.isDirectory() ?? false;
  const list = async (p: string) => ((await real(p)) ? await fs.readdir(p) : []);
  const sd = slotDir(root, slot);
  for (const bench of await list(sd))
    for (const rules of await list(path.join(sd, bench)))
      for (const team of await list(path.join(sd, bench, rules))) {
        const dir = path.join(sd, bench, rules, team);
        if (!(await real(dir))) continue;
        const marker = await lstatOrNull(markerOf(dir));
        out.push({ dir, bytes: await diskBytes(dir), lastUsed: marker?.mtimeMs ?? 0 });
      }
  return out;
}

/**
 * Evicts the least recently used entries of the slot, `keep` last, until the slot's caches take at
 * most maxBytes together; returns what it removed. keep itself is removed only when it alone is
 * over the bound.
 */
export async function enforceSlotBound(o: {
  root: string;
  slot: number;
  maxBytes: number;
  keep?: string;
}): Promise<{ removed: string[]; keptBytes: number }> {
  const entries = await slotEntries(o.root, o.slot);
  let total = entries.reduce((s, e) => s + e.bytes, 0);
  const removed: string[] = [];
  const order = entries
    .filter((e) => e.dir !== o.keep)
    .sort((a, b) => a.lastUsed - b.lastUsed || a.dir.localeCompare(b.dir));
  const own = entries.find((e) => e.dir === o.keep);
  if (own) order.push(own);
  for (const e of order) {
    if (total <= o.maxBytes) break;
    await removeTree(e.dir);
    total -= e.bytes;
    removed.push(e.dir);
  }
  const keptBytes = own && !removed.includes(own.dir) ? own.bytes : 0;
  return { removed, keptBytes };
}

/** The cache a run's candidate gets: the folder to bind, or null with the reason (logged). */
export type PreparedCache = { dir: string; bytes: number } | { dir: null; why: string };

/**
 * Before a decode run: drops the benchmark's caches of other rules versions on this slot, evicts
 * least recently used entries to the bound, and makes (or reuses) the team's cache folder, the
 * agent's own and 0700: only the harness writes it (the candidate gets a copy in a sized tmpfs,
 * harness/harness/compile_cache.py). Never throws: whatever fails, the run goes on with an empty
 * cache of its own, and the reason says why.
 */
export async function prepareCompileCache(o: {
  root: string;
  key: CompileCacheKey;
  maxBytes: number;
  now?: Date;
  note: (text: string) => void;
}): Promise<PreparedCache> {
  const { root, key } = o;
  const entry = entryDir(root, key);
  try {
    if (o.maxBytes <= 0) return { dir: null, why: 'compileCache.maxBytesPerSlot is 0' };
    const bench = benchmarkDir(root, key);
    const current = rulesName(key.rulesVersion);
    if ((await lstatOrNull(bench))?.isDirectory())
      for (const name of await fs.readdir(bench))
        if (name !== current) {
          await removeTree(path.join(bench, name));
          o.note(
            `compile cache: deleted this slot's caches of ${key.benchmarkId} ${name} (the rules are version ${key.rulesVersion} now)`,
          );
        }
    const { removed } = await enforceSlotBound({ root, slot: key.slot, maxBytes: o.maxBytes, keep: entry });
    for (const dir of removed)
      o.note(
        dir === entry
          ? `compile cache: this team's cache alone was over the slot's bound of ${o.maxBytes} bytes: deleted`
          : `compile cache: evicted ${path.relative(root, dir)} (least recently used; the slot's bound is ${o.maxBytes} bytes)`,
      );
    if (removed.includes(entry))
      return { dir: null, why: `its cache was over the slot's bound of ${o.maxBytes} bytes` };
    // Every level the agent makes is a real folder, never a link someone put in its place.
    for (const dir of [root, slotDir(root, key.slot), bench, path.dirname(entry), entry]) {
      const st = await lstatOrNull(dir);
      if (st && !st.isDirectory()) await removeTree(dir);
      if (!st || !st.isDirectory()) await fs.mkdir(dir, { mode: 0o700 });
    }
    const cache = cacheDirOf(entry);
    let st = await lstatOrNull(cache);
    // Not a folder: start over.
    if (st && !st.isDirectory()) {
      await removeTree(cache);
      o.note("compile cache: the team's cache was not a folder: started over");
      st = null;
    }
    if (!st) await fs.mkdir(cache, { mode: 0o700 });
    await fs.chmod(cache, 0o700);
    const now = o.now ?? new Date();
    await fs.writeFile(markerOf(entry), '');
    await fs.utimes(markerOf(entry), now, now);
    return { dir: cache, bytes: await diskBytes(cache) };
  } catch (err) {
    return { dir: null, why: `its cache folder could not be made ready: ${(err as Error).message}` };
  }
}
