import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import { gzipSync } from 'node:zlib';

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

const BLOCK = 512;
const enc = new TextEncoder();

function put(header: Uint8Array, offset: number, length: number, value: string): void {
  const bytes = enc.encode(value);
  if (bytes.length > length) throw new Error(`"${value}" does not fit a tar header field of ${length} bytes`);
  header.set(bytes, offset);
}

function putOctal(header: Uint8Array, offset: number, length: number, value: number): void {
  put(header, offset, length, value.toString(8).padStart(length - 1, '0'));
}

/** ustar name/prefix split: names up to 255 bytes, split at a slash. */
function splitName(name: string): { name: string; prefix: string } {
  if (enc.encode(name).length <= 100) return { name, prefix: '' };
  for (let i = name.indexOf('/'); i !== -1; i = name.indexOf('/', i + 1)) {
    const prefix = name.slice(0, i);
    const rest = name.slice(i + 1);
    if (enc.encode(prefix).length <= 155 && enc.encode(rest).length <= 100) return { name: rest, prefix };
  }
  throw new Error(`${name} is too long for the template archive (ustar allows 255 bytes)`);
}

export function templateTar(entries: TemplateEntry[]): Uint8Array {
  const parts: Uint8Array[] = [];
  for (const e of entries) {
    const header = new Uint8Array(BLOCK);
    const { name, prefix } = splitName(e.type === 'directory' ? `${e.name}/` : e.name);
    put(header, 0, 100, name);
    putOctal(header, 100, 8, e.mode);
    putOctal(header, 108, 8, 0);
    putOctal(header, 116, 8, 0);
    putOctal(header, 124, 12, e.type === 'file' ? e.content.length : 0);
    putOctal(header, 136, 12, 0);
    header[156] = (e.type === 'directory' ? '5' : '0').charCodeAt(0);
    put(header, 257, 6, 'ustar');
    put(header, 263, 2, '00');
    put(header, 345, 155, prefix);
    for (let i = 148; i < 156; i++) header[i] = 32;
    let sum = 0;
    for (let i = 0; i < BLOCK; i++) sum += header[i];
    put(header, 148, 8, sum.toString(8).padStart(6, '0') + '\0 ');
    parts.push(header);
    if (e.type === 'file' && e.content.length > 0) {
      const padded = new Uint8Array(Math.ceil(e.content.length / BLOCK) * BLOCK);
      padded.set(e.content);
      parts.push(padded);
    }
  }
  parts.push(new Uint8Array(BLOCK * 2));
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let pos = 0;
  for (const p of parts) {
    out.set(p, pos);
    pos += p.length;
  }
  return out;
}

/** The whole starter folder as `<top>/…` in a deterministic .tar.gz. */
export async function packTemplate(root: string, top: string): Promise<Buffer> {
  const gz = gzipSync(templateTar(await collectTemplate(root, top)), { level: 9 });
  gz[9] = 0xff; // gzip's OS byte differs between platforms; "unknown" keeps the bytes identical everywhere
  return gz;
}
