import {
  checkCompressedContainer,
  MAX_TAR_STREAM_BYTES,
  mergeContainerProblems,
  validateSingleFile,
  validateTar,
  type RuleVerdict,
} from '@dryft/libs';

export interface LocalVerdict {
  ok: boolean;
  verdicts: RuleVerdict[];
  files: { path: string; size: number }[];
  expandedBytes: number;
}

/** Decompresses gzip in the browser, stopping once more than `limit` bytes come out. */
export async function gunzipLimited(
  data: Uint8Array,
  limit: number,
): Promise<{ bytes: Uint8Array; truncated: boolean; error?: string }> {
  const stream = new Blob([data as BlobPart]).stream().pipeThrough(new DecompressionStream('gzip'));
  const reader = stream.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  let truncated = false;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      total += value.length;
      if (total > limit) {
        truncated = true;
        await reader.cancel().catch(() => undefined);
        break;
      }
      chunks.push(value);
    }
  } catch (err) {
    return {
      bytes: new Uint8Array(0),
      truncated: false,
      error: (err as Error).message || 'corrupt gzip data',
    };
  }
  const out = new Uint8Array(chunks.reduce((n, c) => n + c.length, 0));
  let pos = 0;
  for (const c of chunks) {
    out.set(c, pos);
    pos += c.length;
  }
  return { bytes: out, truncated };
}

/** The same rules the API applies, run on the user's machine before anything is uploaded. */
export async function validateArchiveBytes(data: Uint8Array): Promise<LocalVerdict> {
  const container = checkCompressedContainer(data.subarray(0, 4), data.length);
  if (container.some((p) => p.rule === 'format')) {
    const v = mergeContainerProblems(container);
    return { ok: false, verdicts: v.verdicts, files: [], expandedBytes: 0 };
  }
  const gz = await gunzipLimited(data, MAX_TAR_STREAM_BYTES);
  if (gz.error) {
    const v = mergeContainerProblems([
      ...container,
      { rule: 'format', message: `The gzip data is corrupt or truncated (${gz.error}). Package it again.` },
    ]);
    return { ok: false, verdicts: v.verdicts, files: [], expandedBytes: 0 };
  }
  const tar = validateTar(gz.bytes, { truncatedAtLimit: gz.truncated });
  const v = mergeContainerProblems(container, tar);
  return {
    ok: v.ok,
    verdicts: v.verdicts,
    files: tar.files.map((f) => ({ path: f.path, size: f.size })),
    expandedBytes: tar.expandedBytes,
  };
}

export function validateSingleFileBytes(name: string, data: Uint8Array): LocalVerdict {
  const v = validateSingleFile(name, data);
  return {
    ok: v.ok,
    verdicts: v.verdicts,
    files: v.files.map((f) => ({ path: f.path, size: f.size })),
    expandedBytes: v.expandedBytes,
  };
}

export async function validateUpload(kind: 'archive' | 'file', file: File): Promise<LocalVerdict> {
  const data = new Uint8Array(await file.arrayBuffer());
  return kind === 'archive' ? validateArchiveBytes(data) : validateSingleFileBytes(file.name, data);
}

/**
 * A submission.py the browser renamed on download ("submission (1).py", "submission-2.py",
 * "submission(3).py"): the page offers to upload it as submission.py instead of only refusing it.
 */
export function renamedSubmissionPy(name: string): boolean {
  return name !== 'submission.py' && /^submission\s*(?:\(\d+\)|[-_ ]\d+)\.py$/i.test(name);
}

/** The same bytes under the name the rules require. */
export function asSubmissionPy(file: File): File {
  return new File([file], 'submission.py', {
    type: file.type || 'text/x-python',
    lastModified: file.lastModified,
  });
}
