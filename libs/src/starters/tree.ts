import { promises as fs } from 'node:fs';
import * as path from 'node:path';

/**
 * A starter as a participant gets it: the starter's own folder (`starters/<name>`) with the files
 * every starter shares laid over it from `starters/_shared/` (the research loop, the CLI installers,
 * `.gitignore`, `bin/.gitkeep`). The repository keeps one copy of a shared file; every place that
 * hands out a starter reads it through `collectStarter`: the hub's "Download template", the built
 * starter folders (`scripts/build-starters.mjs`, what a GitHub template repository holds) and the
 * tests. A folder without `dryft.json` (recurrence-cpu: a sample file and its README, no starter
 * repository) gets no overlay.
 */
export const SHARED_STARTER_DIR = '_shared';
/** The file that makes a folder a starter repository (the benchmark it belongs to). */
export const STARTER_SETTINGS_FILE = 'dryft.json';

export interface StarterFile {
  /** POSIX path inside the starter. */
  path: string;
  content: Buffer;
  /** By name, not by the disk's file mode: the same starter gives the same modes on every machine. */
  executable: boolean;
}

/*
 * Never part of a built starter, whatever is on the disk: what the starter's .gitignore keeps out
 * of git (the research loop's journal and work folders, the installed CLI in bin/, tokens, packaged
 * archives, Python caches).
 */
const SKIP_ANYWHERE = new Set([
  '__pycache__',
  '.pytest_cache',
  '.mypy_cache',
  '.DS_Store',
  '.git',
  'node_modules',
  '.venv',
  'venv',
  '.env',
]);
const KEEP_IN_BIN = new Set(['.gitkeep', 'README.md']);
const SKIP_IN_AGENT = new Set(['.work', 'best']);

/** True when `rel` (a POSIX path inside the starter) must not be in a built starter. */
export function excludedFromStarter(rel: string, isDirectory: boolean): boolean {
  const parts = rel.split('/');
  const name = parts[parts.length - 1];
  if (parts.some((p) => SKIP_ANYWHERE.has(p))) return true;
  if (!isDirectory) {
    if (/\.(pyc|pyo|token|tar\.gz|tgz)$/i.test(name) || /^\.env\./.test(name)) return true;
    if (parts.length === 2 && parts[0] === 'bin' && !KEEP_IN_BIN.has(name)) return true;
    if (parts[0] === 'agent' && /^journal.*\.jsonl$/.test(name)) return true;
  }
  if (parts.length >= 2 && parts[0] === 'agent' && SKIP_IN_AGENT.has(parts[1])) return true;
  return false;
}

/** The shared folder beside a starter folder (`starters/_shared` for `starters/toy-decode`). */
export function sharedStarterDir(starterDir: string): string {
  return path.join(path.dirname(path.resolve(starterDir)), SHARED_STARTER_DIR);
}

/** A folder's files, minus the exclusions; links and special files are skipped (a starter never needs them). */
async function readFolder(root: string): Promise<Map<string, Buffer>> {
  const out = new Map<string, Buffer>();
  async function walk(dir: string, rel: string): Promise<void> {
    for (const entry of await fs.readdir(dir, { withFileTypes: true })) {
      const childRel = rel ? `${rel}/${entry.name}` : entry.name;
      if (entry.isDirectory()) {
        if (!excludedFromStarter(childRel, true)) await walk(path.join(dir, entry.name), childRel);
      } else if (entry.isFile() && !excludedFromStarter(childRel, false)) {
        out.set(childRel, await fs.readFile(path.join(dir, entry.name)));
      }
    }
  }
  await walk(root, '');
  return out;
}

/**
 * The starter's files with the shared ones laid over it, sorted by path. A file in both places is
 * refused: the repository keeps one copy, and which one ships must never depend on an order.
 */
export async function collectStarter(
  starterDir: string,
  sharedDir: string = sharedStarterDir(starterDir),
): Promise<StarterFile[]> {
  const root = path.resolve(starterDir);
  if (root === path.resolve(sharedDir))
    throw new Error(`${starterDir} is the shared folder itself, not a starter; name a starter beside it.`);
  const own = await readFolder(root);
  const files = new Map(own);
  if (own.has(STARTER_SETTINGS_FILE)) {
    for (const [rel, content] of await readFolder(sharedDir)) {
      if (own.has(rel))
        throw new Error(
          `${rel} is in both ${starterDir} and ${sharedDir}: a shared file has one copy, in ${sharedDir}; delete the starter's own.`,
        );
      files.set(rel, content);
    }
  }
  return [...files]
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([rel, content]) => ({ path: rel, content, executable: rel.endsWith('.sh') }));
}

/** Writes a starter with its overlay into `outDir` (made empty first): the tree a template repository holds. */
export async function writeStarter(
  starterDir: string,
  outDir: string,
  sharedDir?: string,
): Promise<StarterFile[]> {
  const files = await collectStarter(starterDir, sharedDir);
  await fs.rm(outDir, { recursive: true, force: true });
  for (const f of files) {
    const target = path.join(outDir, ...f.path.split('/'));
    await fs.mkdir(path.dirname(target), { recursive: true });
    await fs.writeFile(target, f.content, { mode: f.executable ? 0o755 : 0o644 });
  }
  return files;
}
