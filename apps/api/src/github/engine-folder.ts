import { readTar, TarFormatError } from '@dryft/libs';
import { gunzipLimited } from '@dryft/libs/node';

/** A repository expands to at most this much while we look for its engine folder. */
export const MAX_REPOSITORY_EXPANDED_BYTES = 256 * 1024 * 1024;

/** The engine folder could not be taken from the commit; `rule` is the archive rule it breaks. */
export class EngineFolderError extends Error {
  constructor(
    readonly rule: string,
    message: string,
  ) {
    super(message);
  }
}

/**
 * Normalizes an engine folder setting ("engine", "./engine/", "src/engine", "." for the root).
 * Returns null for a path that could leave the repository.
 */
export function normalizeEngineFolder(raw: string): string | null {
  const trimmed = raw
    .trim()
    .replace(/\\/g, '/')
    .replace(/^\.\/+/, '')
    .replace(/\/+$/, '');
  if (trimmed === '' || trimmed === '.') return '.';
  if (trimmed.startsWith('/') || trimmed.length > 200) return null;
  const parts = trimmed.split('/');
  if (parts.some((p) => p === '' || p === '.' || p === '..' || [...p].some((c) => c.charCodeAt(0) < 0x20)))
    return null;
  return parts.join('/');
}

/**
 * Takes the engine folder out of a GitHub tarball (`owner-repo-sha/` at the top), as archive entries
 * relative to that folder, ready for packFiles. Links and special files are refused like an upload
 * would refuse them; __pycache__ and .DS_Store are skipped like `dryft package` skips them.
 */
export async function engineFilesFromTarball(
  tgz: Buffer,
  folder: string,
  where: string,
): Promise<{ name: string; content: Uint8Array }[]> {
  let tar: { bytes: Buffer; truncated: boolean };
  try {
    tar = await gunzipLimited(tgz, MAX_REPOSITORY_EXPANDED_BYTES);
  } catch (err) {
    throw new EngineFolderError(
      'format',
      `GitHub sent a corrupt tarball for ${where} (${(err as Error).message}); redeliver to try again.`,
    );
  }
  if (tar.truncated) {
    throw new EngineFolderError(
      'expanded_size',
      `${where} expands beyond ${MAX_REPOSITORY_EXPANDED_BYTES / 1024 / 1024} MiB; keep weights and datasets out of the repository.`,
    );
  }
  const files: { name: string; content: Uint8Array }[] = [];
  const topFolders = new Set<string>();
  const refused: string[] = [];
  try {
    readTar(tar.bytes, (entry) => {
      const slash = entry.name.indexOf('/');
      if (slash === -1) return; // the top folder itself, or a stray root file
      const rel = entry.name.slice(slash + 1).replace(/\/+$/, '');
      if (!rel) return;
      const firstPart = rel.split('/')[0];
      if (rel.includes('/') || entry.type === 'directory') topFolders.add(firstPart);
      let inside: string;
      if (folder === '.') inside = rel;
      else if (rel.startsWith(`${folder}/`)) inside = rel.slice(folder.length + 1);
      else return;
      const parts = inside.split('/');
      if (parts.includes('__pycache__') || parts[parts.length - 1] === '.DS_Store') return;
      if (entry.type === 'directory') return;
      if (entry.type !== 'file') {
        refused.push(`${inside} (${entry.type})`);
        return;
      }
      files.push({ name: inside, content: entry.content.slice() });
    });
  } catch (err) {
    if (err instanceof TarFormatError)
      throw new EngineFolderError(
        'format',
        `GitHub sent an unreadable tarball for ${where} (${err.message}); redeliver to try again.`,
      );
    throw err;
  }
  if (refused.length) {
    throw new EngineFolderError(
      'entry_types',
      `The engine folder "${folder}" in ${where} holds links or special files: ${refused.slice(0, 5).join(', ')}. Only regular files and folders can be submitted.`,
    );
  }
  if (files.length === 0) {
    const seen = [...topFolders].sort().slice(0, 10).join(', ') || 'none';
    throw new EngineFolderError(
      'entrypoint',
      `The engine folder "${folder}" does not exist (or is empty) in ${where}. Set the engine folder to the folder that contains engine.py; the folders at the top are: ${seen}.`,
    );
  }
  return files;
}
