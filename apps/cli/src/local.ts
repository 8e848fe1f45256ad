import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import { ARCHIVE_RULES, type RuleVerdict, validateSingleFile } from '@dryft/libs';
import { collectFolder, packFiles, validateArchive } from '@dryft/libs/node';
import { CliError, EXIT } from './errors';

/** What the user pointed at: a folder to pack, an archive as is, or a single source file. */
export type LocalKind = 'folder' | 'archive' | 'file';

export interface LocalCheck {
  kind: LocalKind;
  target: string;
  ok: boolean;
  verdicts: RuleVerdict[];
  /** The bytes that would be uploaded (the packed archive, the archive, or the file). */
  bytes: Buffer | null;
  /** The name the upload carries. */
  uploadName: string;
  files: { path: string; size: number }[];
}

const GZIP = [0x1f, 0x8b];

async function statOrFail(target: string) {
  try {
    return await fs.stat(target);
  } catch {
    throw new CliError(
      EXIT.badInput,
      `${target} does not exist. Pass the engine folder (e.g. engine), a .tar.gz archive or a submission.py.`,
    );
  }
}

export async function detectKind(target: string): Promise<LocalKind> {
  const st = await statOrFail(target);
  if (st.isDirectory()) return 'folder';
  if (!st.isFile()) throw new CliError(EXIT.badInput, `${target} is neither a folder nor a regular file.`);
  const lower = target.toLowerCase();
  if (lower.endsWith('.py')) return 'file';
  if (lower.endsWith('.tar.gz') || lower.endsWith('.tgz') || lower.endsWith('.zip')) return 'archive';
  const handle = await fs.open(target, 'r');
  try {
    const head = Buffer.alloc(2);
    await handle.read(head, 0, 2, 0);
    return head[0] === GZIP[0] && head[1] === GZIP[1] ? 'archive' : 'file';
  } finally {
    await handle.close();
  }
}

/** Packs a folder deterministically (the same bytes `dryft package` writes). */
export async function packLocalFolder(dir: string): Promise<{ bytes: Buffer | null; problem?: string }> {
  try {
    const files = await collectFolder(dir);
    return { bytes: packFiles(files) };
  } catch (err) {
    return { bytes: null, problem: (err as Error).message };
  }
}

/** The same verdict the server gives, computed offline with the shared rules. */
export async function checkLocal(target: string, kindHint?: LocalKind): Promise<LocalCheck> {
  const kind = kindHint ?? (await detectKind(target));
  if (kind === 'file') {
    const content = await fs.readFile(target);
    const v = validateSingleFile(path.basename(target), content);
    return {
      kind,
      target,
      ok: v.ok,
      verdicts: v.verdicts,
      bytes: content,
      uploadName: path.basename(target),
      files: v.files.map((f) => ({ path: f.path, size: f.size })),
    };
  }
  let bytes: Buffer | null;
  if (kind === 'folder') {
    const packed = await packLocalFolder(target);
    if (!packed.bytes) {
      const verdicts: RuleVerdict[] = (Object.keys(ARCHIVE_RULES) as (keyof typeof ARCHIVE_RULES)[]).map(
        (rule) => ({
          rule,
          title: ARCHIVE_RULES[rule],
          passed: rule !== 'entry_types',
          problems: rule === 'entry_types' ? [packed.problem ?? 'cannot package this folder'] : [],
        }),
      );
      return { kind, target, ok: false, verdicts, bytes: null, uploadName: 'submission.tar.gz', files: [] };
    }
    bytes = packed.bytes;
  } else {
    bytes = await fs.readFile(target);
  }
  const v = await validateArchive(bytes);
  return {
    kind,
    target,
    ok: v.ok,
    verdicts: v.verdicts,
    bytes,
    uploadName: kind === 'folder' ? 'submission.tar.gz' : path.basename(target),
    files: v.files.map((f) => ({ path: f.path, size: f.size })),
  };
}
