import { gunzipLimited } from '@dryft/libs/node';
import { ARCHIVE_LIMITS, isUtf8, readTar } from '@dryft/libs';
import type { SubmissionCodeFile } from '@dryft/libs';

/** A file larger than this is listed but not shown in the browser (the download has it whole). */
export const SHOWN_FILE_BYTES = 512 * 1024;

const LANGUAGES: [RegExp, SubmissionCodeFile['language']][] = [
  [/\.py$/i, 'python'],
  [/\.(md|markdown)$/i, 'markdown'],
  [/\.json$/i, 'json'],
  [/\.ya?ml$/i, 'yaml'],
  [/\.toml$/i, 'toml'],
  [/\.(sh|bash)$/i, 'shell'],
];

export function languageOf(path: string): SubmissionCodeFile['language'] {
  return LANGUAGES.find(([pattern]) => pattern.test(path))?.[1] ?? 'text';
}

function shown(path: string, content: Uint8Array): SubmissionCodeFile {
  const base = { path, size: content.length, language: languageOf(path) };
  if (content.length > SHOWN_FILE_BYTES) return { ...base, text: null, omitted: 'too_large' };
  if (!isUtf8(content) || content.includes(0)) return { ...base, text: null, omitted: 'binary' };
  return { ...base, text: Buffer.from(content).toString('utf8'), omitted: null };
}

/**
 * The files of a stored submission as the code view shows them, in the archive's order. The bytes
 * passed the upload rules when they were stored, so the archive is well formed and within
 * ARCHIVE_LIMITS; the limit is applied again anyway, since it costs nothing.
 */
export async function submissionFiles(
  kind: 'archive' | 'file',
  bytes: Buffer,
): Promise<SubmissionCodeFile[]> {
  if (kind === 'file') return [shown('submission.py', bytes)];
  const { bytes: tar } = await gunzipLimited(bytes, ARCHIVE_LIMITS.expandedBytes + 64 * 1024);
  const files: SubmissionCodeFile[] = [];
  readTar(tar, (entry) => {
    if (entry.type === 'file') files.push(shown(entry.name.replace(/^\.\//, ''), entry.content));
  });
  return files;
}
