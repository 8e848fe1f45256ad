import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import { writeTar } from '@dryft/libs';
import { gzipDeterministic } from '@dryft/libs/node';

/**
 * "Download template": a starter's whole tree as a deterministic .tar.gz with one top folder named
 * after the starter, for people who will not use GitHub's "Use this template". The same tree always
 * gives the same bytes (sorted entries, mtime 0, uid/gid 0, no owner names, gzip OS byte 0xff).
 * Shell scripts (install-dryft.sh) are 0755, everything else 0644, folders 0755.
 *
 * Never shipped, whatever is on the hub's disk: what the starter's .gitignore keeps out of git
 * (the research loop's journal and work folders, the installed CLI in bin/, tokens, packaged
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

/** True when `rel` (a POSIX path inside the starter) must not be in the template. */
export function excludedFromTemplate(rel: string, isDirectory: boolean): boolean {
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

export interface TemplateEntry {
  /** Path inside the archive, under the top folder; folders end without a slash. */
  name: string;
  type: 'file' | 'directory';
  mode: number;
  content: Uint8Array;
}

/** Walks the starter folder; links and special files are skipped (a template never needs them). */
export async function collectTemplate(root: string, top: string): Promise<TemplateEntry[]> {
  const out: TemplateEntry[] = [{ name: top, type: 'directory', mode: 0o755, content: new Uint8Array() }];
  async function walk(dir: string, rel: string): Promise<void> {
    const entries = await fs.readdir(dir, { withFileTypes: true });
    for (const entry of entries) {
      const childRel = rel ? `${rel}/${entry.name}` : entry.name;
      const full = path.join(dir, entry.name);
      if (entry.isDirectory()) {
        if (excludedFromTemplate(childRel, true)) continue;
        out.push({ name: `${top}/${childRel}`, type: 'directory', mode: 0o755, content: new Uint8Array() });
        await walk(full, childRel);
      } else if (entry.isFile()) {
        if (excludedFromTemplate(childRel, false)) continue;
        // By name, not by the hub's file mode: the same starter gives the same bytes on every hub.
        const executable = entry.name.endsWith('.sh');
        out.push({
          name: `${top}/${childRel}`,
          type: 'file',
          mode: executable ? 0o755 : 0o644,
          content: await fs.readFile(full),
        });
      }
    }
  }
  await walk(root, '');
  return out.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

/** The whole starter folder as `<top>/…` in a deterministic .tar.gz (the shared tar writer). */
export async function packTemplate(root: string, top: string): Promise<Buffer> {
  return gzipDeterministic(writeTar(await collectTemplate(root, top)));
}
