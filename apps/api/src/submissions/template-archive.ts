import { writeTar } from '@dryft/libs';
import { collectStarter, gzipDeterministic } from '@dryft/libs/node';

/**
 * "Download template": a starter's whole tree (its own folder with the shared files of
 * starters/_shared laid over it, libs/src/starters/tree.ts) as a deterministic .tar.gz with one top
 * folder named after the starter, for people who will not use GitHub's "Use this template". The
 * same tree always gives the same bytes (sorted entries, mtime 0, uid/gid 0, no owner names, gzip OS
 * byte 0xff). Shell scripts (install-dryft.sh) are 0755, everything else 0644, folders 0755.
 *
 * Never shipped, whatever is on the hub's disk: what the starter's .gitignore keeps out of git
 * (the research loop's journal and work folders, the installed CLI in bin/, tokens, packaged
 * archives, Python caches).
 */
export interface TemplateEntry {
  /** Path inside the archive, under the top folder; folders end without a slash. */
  name: string;
  type: 'file' | 'directory';
  mode: number;
  content: Uint8Array;
}

/** The built starter as tar entries: every file under `top`, each folder once before what it holds. */
export async function collectTemplate(root: string, top: string): Promise<TemplateEntry[]> {
  const out: TemplateEntry[] = [{ name: top, type: 'directory', mode: 0o755, content: new Uint8Array() }];
  const folders = new Set<string>();
  for (const file of await collectStarter(root)) {
    const parts = file.path.split('/');
    for (let i = 1; i < parts.length; i++) folders.add(parts.slice(0, i).join('/'));
    out.push({
      name: `${top}/${file.path}`,
      type: 'file',
      mode: file.executable ? 0o755 : 0o644,
      content: file.content,
    });
  }
  for (const folder of folders)
    out.push({ name: `${top}/${folder}`, type: 'directory', mode: 0o755, content: new Uint8Array() });
  return out.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

/**
 * The whole starter folder as `<top>/…` in a deterministic .tar.gz (the shared tar writer). With
 * `hub`, the template's dryft.json names the hub that handed it out (`"hub": "https://…"`): its
 * installers and ./bin/dryft use that hub without being told.
 */
export async function packTemplate(root: string, top: string, opts: { hub?: string } = {}): Promise<Buffer> {
  const entries = await collectTemplate(root, top);
  if (opts.hub) {
    const settings = entries.find((e) => e.name === `${top}/dryft.json`);
    if (settings) {
      const json = JSON.parse(Buffer.from(settings.content).toString('utf8')) as Record<string, unknown>;
      settings.content = Buffer.from(`${JSON.stringify({ ...json, hub: opts.hub }, null, 2)}\n`);
    }
  }
  return gzipDeterministic(writeTar(entries));
}
