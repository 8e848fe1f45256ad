import { createGunzip, gzipSync } from 'node:zlib';
import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import {
  ArchiveRule,
  checkCompressedContainer,
  MAX_TAR_STREAM_BYTES,
  mergeContainerProblems,
  Validation,
  validateTar,
} from './rules';
import { TarInput, writeTar } from './tar';

/**
 * Decompresses at most `limit` bytes of a gzip stream. It counts while decompressing and stops
 * there, so a gzip bomb costs no more than the limit in memory or time.
 */
export function gunzipLimited(
  data: Uint8Array,
  limit: number,
): Promise<{ bytes: Buffer; truncated: boolean }> {
  return new Promise((resolve, reject) => {
    const gunzip = createGunzip();
    const chunks: Buffer[] = [];
    let total = 0;
    let done = false;
    gunzip.on('data', (chunk: Buffer) => {
      if (done) return;
      total += chunk.length;
      if (total > limit) {
        done = true;
        gunzip.destroy();
        resolve({ bytes: Buffer.concat(chunks), truncated: true });
        return;
      }
      chunks.push(chunk);
    });
    gunzip.on('end', () => {
      if (!done) resolve({ bytes: Buffer.concat(chunks), truncated: false });
    });
    gunzip.on('error', (err) => {
      if (!done) reject(err);
    });
    gunzip.end(Buffer.from(data.buffer, data.byteOffset, data.byteLength));
  });
}

/** Validates an uploaded `.tar.gz` with the shared rules: the same verdict everywhere. */
export async function validateArchive(data: Uint8Array): Promise<Validation<ArchiveRule>> {
  const container = checkCompressedContainer(data.subarray(0, 4), data.length);
  if (container.length > 0) return mergeContainerProblems(container);
  let tar: { bytes: Buffer; truncated: boolean };
  try {
    tar = await gunzipLimited(data, MAX_TAR_STREAM_BYTES);
  } catch (err) {
    return mergeContainerProblems([
      {
        rule: 'format',
        message: `The gzip stream is corrupt or truncated (${(err as Error).message}); package it again.`,
      },
    ]);
  }
  return validateTar(tar.bytes, { truncatedAtLimit: tar.truncated });
}

/** Lists a folder's files as archive entries (relative POSIX paths), refusing links and specials. */
export async function collectFolder(root: string): Promise<{ name: string; content: Uint8Array }[]> {
  const out: { name: string; content: Uint8Array }[] = [];
  async function walk(dir: string, rel: string): Promise<void> {
    const entries = await fs.readdir(dir, { withFileTypes: true });
    for (const entry of entries) {
      const full = path.join(dir, entry.name);
      const name = rel ? `${rel}/${entry.name}` : entry.name;
      if (entry.name === '__pycache__' || entry.name === '.DS_Store') continue;
      if (entry.isDirectory()) await walk(full, name);
      else if (entry.isFile()) out.push({ name, content: await fs.readFile(full) });
      else throw new Error(`${name} is a link or special file; only regular files can be packaged.`);
    }
  }
  await walk(root, '');
  return out;
}

/** gzip with fixed header bytes: the same tar always compresses to the same archive. */
export function gzipDeterministic(tar: Uint8Array): Buffer {
  const gz = gzipSync(tar, { level: 9 });
  gz[9] = 0xff; // gzip's OS byte differs between platforms; "unknown" keeps bytes identical everywhere.
  return gz;
}

/** Deterministic `.tar.gz` bytes: the same folder always packs to the same archive. */
export function packFiles(files: TarInput[]): Buffer {
  return gzipDeterministic(writeTar(files));
}

export async function packFolder(root: string): Promise<Buffer> {
  return packFiles(await collectFolder(root));
}

/**
 * Writes validated files into a fresh, empty directory and nowhere else: every path is resolved and
 * checked to stay inside, folders are created without following links, and no file is overwritten.
 */
export async function unpackValidated(
  files: { path: string; content: Uint8Array }[],
  dir: string,
): Promise<void> {
  const root = path.resolve(dir);
  const existing = await fs.readdir(root);
  if (existing.length > 0) throw new Error(`${root} is not empty; unpack only into a fresh directory`);
  for (const file of files) {
    const target = path.resolve(root, file.path);
    if (!target.startsWith(root + path.sep)) throw new Error(`${file.path} would land outside the workspace`);
    await fs.mkdir(path.dirname(target), { recursive: true });
    const real = await fs.realpath(path.dirname(target));
    if (real !== root && !real.startsWith(root + path.sep))
      throw new Error(`${file.path} would land outside the workspace`);
    await fs.writeFile(target, file.content, { flag: 'wx', mode: 0o644 });
  }
}
