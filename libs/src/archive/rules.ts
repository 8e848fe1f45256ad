import { checkEngineModule, checkSubmissionModule, forbiddenUses, parsePython } from './python';
import { readTar, TarEntry, TarFormatError } from './tar';

/**
 * The submission rules of the decode product page, in one place: the API refuses with them, the CLI
 * validates with them offline and the web shows them per rule before an upload.
 */
export const ARCHIVE_LIMITS = {
  compressedBytes: 2 * 1024 * 1024,
  expandedBytes: 16 * 1024 * 1024,
  files: 200,
  /** The .py files of one archive, together: what the syntax check reads per upload. */
  pythonBytes: 4 * 1024 * 1024,
} as const;

export const SINGLE_FILE_LIMITS = { bytes: 256 * 1024, filename: 'submission.py' } as const;

export const ALLOWED_EXTENSIONS = [
  '.py',
  '.pyi',
  '.yaml',
  '.yml',
  '.json',
  '.toml',
  '.txt',
  '.md',
  '.cfg',
  '.ini',
];

export const ARCHIVE_RULES = {
  format: 'A gzip-compressed tar archive (.tar.gz); ZIP is not supported',
  compressed_size: 'At most 2 MiB compressed',
  expanded_size: 'At most 16 MiB expanded',
  file_count: 'At most 200 files',
  entrypoint:
    'engine.py at the root of the archive, exporting class Engine with __init__(self, model_path) and generate(self, input_ids, max_new_tokens)',
  layout: 'No containing folder and no ./ path prefixes',
  paths: 'No absolute paths, no .. and no empty or control-character names',
  entry_types: 'Regular files and folders only: no links, devices or pipes',
  unique_names: 'No duplicate names, also after ignoring case and Unicode normalization',
  extensions: `Allowed file types only: ${ALLOWED_EXTENSIONS.join(' ')}`,
  text: 'UTF-8 text files only (no binaries, no macOS ._ files)',
  python_syntax:
    'Every .py file is valid Python 3.11 (checked without running it), at most 4 MiB of Python in all',
} as const;
export type ArchiveRule = keyof typeof ARCHIVE_RULES;

export const SINGLE_FILE_RULES = {
  filename: 'The file is named submission.py',
  size: 'At most 256 KiB',
  text: 'UTF-8 text',
  python_syntax: 'Valid Python 3.11 (checked without running it)',
  entrypoint: 'Defines SUBMISSION = Submission(build_model=..., build_optimizer=...) at module level',
  forbidden_uses:
    'No torch.load or torch.hub, no network modules (socket, urllib, http, requests …), no subprocess or os.system: checked without running it',
} as const;
export type SingleFileRule = keyof typeof SINGLE_FILE_RULES;

export interface RuleProblem<R extends string = string> {
  rule: R;
  /** The archive entry the problem is about, when there is one. */
  entry?: string;
  /** For Python problems: where in `entry` (1-based). */
  line?: number;
  column?: number;
  message: string;
}

export interface RuleVerdict<R extends string = string> {
  rule: R;
  title: string;
  passed: boolean;
  /** Messages of the problems under this rule (empty when passed). */
  problems: string[];
}

export interface ValidatedFile {
  path: string;
  size: number;
  content: Uint8Array;
}

export interface Validation<R extends string = string> {
  ok: boolean;
  problems: RuleProblem<R>[];
  verdicts: RuleVerdict<R>[];
  files: ValidatedFile[];
  expandedBytes: number;
}

/** Thrown from inside the reader to stop at a hard limit. */
class StopReading extends Error {}

const utf8 = new TextDecoder('utf-8', { fatal: true });

export function isUtf8(bytes: Uint8Array): boolean {
  try {
    utf8.decode(bytes);
    return true;
  } catch {
    return false;
  }
}

function extensionOf(path: string): string {
  const base = path.slice(path.lastIndexOf('/') + 1);
  const dot = base.lastIndexOf('.');
  return dot <= 0 ? '' : base.slice(dot).toLowerCase();
}

function verdictsFor<R extends string>(
  rules: Record<R, string>,
  problems: RuleProblem<R>[],
): RuleVerdict<R>[] {
  return (Object.keys(rules) as R[]).map((rule) => {
    const mine = problems.filter((p) => p.rule === rule).map((p) => p.message);
    return { rule, title: rules[rule], passed: mine.length === 0, problems: mine };
  });
}

function finish(
  problems: RuleProblem<ArchiveRule>[],
  files: ValidatedFile[],
  expandedBytes: number,
): Validation<ArchiveRule> {
  // A refused archive yields no files, so nothing can unpack part of it by mistake.
  const ok = problems.length === 0;
  return {
    ok,
    problems,
    verdicts: verdictsFor(ARCHIVE_RULES, problems),
    files: ok ? files : [],
    expandedBytes,
  };
}

/** Checks what the first bytes say the upload is, before anything is decompressed. */
export function checkCompressedContainer(
  head: Uint8Array,
  compressedSize: number,
): RuleProblem<ArchiveRule>[] {
  const problems: RuleProblem<ArchiveRule>[] = [];
  if (compressedSize > ARCHIVE_LIMITS.compressedBytes) {
    problems.push({
      rule: 'compressed_size',
      message: `The archive is ${compressedSize} bytes; the limit is ${ARCHIVE_LIMITS.compressedBytes} bytes (2 MiB) compressed. Remove large files such as weights or data.`,
    });
  }
  if (
    head.length >= 4 &&
    head[0] === 0x50 &&
    head[1] === 0x4b &&
    (head[2] === 3 || head[2] === 5 || head[2] === 7)
  ) {
    problems.push({
      rule: 'format',
      message:
        'ZIP archives are not supported: package the folder as .tar.gz, e.g. `dryft package engine --output submission.tar.gz`.',
    });
  } else if (head.length < 2 || head[0] !== 0x1f || head[1] !== 0x8b) {
    problems.push({
      rule: 'format',
      message: 'This file is not gzip-compressed: upload a .tar.gz made with `dryft package` or `tar -czf`.',
    });
  }
  return problems;
}

/**
 * Validates the tar stream (already decompressed by the caller, who stops at the expanded limit and
 * reports `truncatedAtLimit`). Collects every problem it can name, entry by entry.
 */
export function validateTar(
  tar: Uint8Array,
  opts: { truncatedAtLimit?: boolean } = {},
): Validation<ArchiveRule> {
  const problems: RuleProblem<ArchiveRule>[] = [];
  const files: ValidatedFile[] = [];
  const seen = new Map<string, string>();
  let expanded = 0;
  let fileCount = 0;
  if (opts.truncatedAtLimit) {
    problems.push({
      rule: 'expanded_size',
      message: `The archive expands to more than ${ARCHIVE_LIMITS.expandedBytes} bytes (16 MiB); reading stopped at the limit. Remove large files.`,
    });
    return finish(problems, [], ARCHIVE_LIMITS.expandedBytes);
  }
  const onEntry = (entry: TarEntry): void => {
    const name = entry.name;
    const shown = JSON.stringify(name);
    if (entry.type === 'symlink' || entry.type === 'hardlink') {
      problems.push({
        rule: 'entry_types',
        entry: name,
        message: `${shown} is a link; include the file itself instead.`,
      });
      return;
    }
    if (entry.type !== 'file' && entry.type !== 'directory') {
      problems.push({
        rule: 'entry_types',
        entry: name,
        message: `${shown} is a ${entry.type}, not a regular file.`,
      });
      return;
    }
    // eslint-disable-next-line no-control-regex -- control characters in names are what this refuses
    if (name === '' || /[\u0000-\u001f\u007f\\]/.test(name)) {
      problems.push({
        rule: 'paths',
        entry: name,
        message: `${shown} has an empty name, a control character or a backslash.`,
      });
      return;
    }
    if (name.startsWith('/')) {
      problems.push({
        rule: 'paths',
        entry: name,
        message: `${shown} is an absolute path; paths must be relative to the archive root.`,
      });
      return;
    }
    if (name.startsWith('./')) {
      problems.push({
        rule: 'layout',
        entry: name,
        message: `${shown} starts with ./; package without ./ prefixes (dryft package does this).`,
      });
      return;
    }
    const parts = name.replace(/\/$/, '').split('/');
    if (parts.some((p) => p === '..' || p === '.' || p === '')) {
      problems.push({
        rule: 'paths',
        entry: name,
        message: `${shown} contains "..", "." or an empty path segment.`,
      });
      return;
    }
    const key = name.replace(/\/$/, '').normalize('NFC').toLowerCase();
    const previous = seen.get(key);
    if (previous !== undefined) {
      problems.push({
        rule: 'unique_names',
        entry: name,
        message:
          previous === name
            ? `${shown} appears twice in the archive.`
            : `${shown} collides with ${JSON.stringify(previous)} (names must differ by more than case or Unicode normalization).`,
      });
      return;
    }
    seen.set(key, name);
    if (entry.type === 'directory') return;
    fileCount += 1;
    if (fileCount > ARCHIVE_LIMITS.files) {
      problems.push({
        rule: 'file_count',
        message: `The archive holds more than ${ARCHIVE_LIMITS.files} files.`,
      });
      throw new StopReading();
    }
    expanded += entry.size;
    if (expanded > ARCHIVE_LIMITS.expandedBytes) {
      problems.push({
        rule: 'expanded_size',
        message: `The files add up to more than ${ARCHIVE_LIMITS.expandedBytes} bytes (16 MiB).`,
      });
      throw new StopReading();
    }
    const base = parts[parts.length - 1];
    if (base.startsWith('._')) {
      problems.push({
        rule: 'text',
        entry: name,
        message: `${shown} is macOS metadata (AppleDouble); package with dryft package or COPYFILE_DISABLE=1 tar.`,
      });
      return;
    }
    const ext = extensionOf(name);
    if (!ALLOWED_EXTENSIONS.includes(ext)) {
      problems.push({
        rule: 'extensions',
        entry: name,
        message: `${shown} has a file type that is not allowed (${ext || 'no extension'}); allowed: ${ALLOWED_EXTENSIONS.join(' ')}.`,
      });
      return;
    }
    if (!isUtf8(entry.content)) {
      problems.push({
        rule: 'text',
        entry: name,
        message: `${shown} is not UTF-8 text; ship source files only.`,
      });
      return;
    }
    files.push({ path: name, size: entry.size, content: entry.content });
  };
  try {
    readTar(tar, onEntry);
  } catch (err) {
    if (err instanceof TarFormatError) {
      problems.push({
        rule: 'format',
        message: `The archive is corrupt or truncated: ${err.message}. Package it again.`,
      });
    } else if (!(err instanceof StopReading)) {
      throw err;
    }
  }
  if (!problems.some((p) => p.rule === 'format' || p.rule === 'file_count' || p.rule === 'expanded_size')) {
    checkLayout([...seen.values()], problems);
    checkPythonFiles(files, problems);
  }
  return finish(problems, files, expanded);
}

/**
 * Parses every .py file (nothing runs) and checks engine.py's class Engine: a file that cannot be
 * imported is refused at upload, before it can spend a run.
 */
function checkPythonFiles(files: ValidatedFile[], problems: RuleProblem<ArchiveRule>[]): void {
  // Bounded before anything is parsed: what one upload can cost the checker does not grow with the
  // 16 MiB expanded limit.
  const python = files.filter((f) => f.path.endsWith('.py'));
  const pythonBytes = python.reduce((sum, f) => sum + f.size, 0);
  if (pythonBytes > ARCHIVE_LIMITS.pythonBytes) {
    const largest = [...python].sort((a, b) => b.size - a.size)[0];
    problems.push({
      rule: 'python_syntax',
      message: `The .py files add up to ${pythonBytes} bytes; at most ${ARCHIVE_LIMITS.pythonBytes} bytes (4 MiB) of Python are checked per archive. Remove generated or vendored Python (the largest is ${JSON.stringify(largest.path)}, ${largest.size} bytes).`,
    });
    return;
  }
  for (const file of python) {
    const mod = parsePython(utf8.decode(file.content));
    if (mod.error) {
      problems.push(pythonProblem('python_syntax', file.path, mod.error));
    } else if (file.path === 'engine.py') {
      const entry = checkEngineModule(mod);
      if (entry) problems.push(pythonProblem('entrypoint', file.path, entry));
    }
  }
}

function pythonProblem<R extends string>(
  rule: R,
  file: string,
  at: { line: number; column: number; message: string },
): RuleProblem<R> {
  return {
    rule,
    entry: file,
    line: at.line,
    column: at.column,
    message: `${file}, line ${at.line}, column ${at.column}: ${at.message}`,
  };
}

function checkLayout(names: string[], problems: RuleProblem<ArchiveRule>[]): void {
  const clean = names.map((n) => n.replace(/\/$/, ''));
  if (clean.includes('engine.py')) return;
  const tops = new Set(clean.map((n) => n.split('/')[0]));
  const nested = clean.find((n) => n.endsWith('/engine.py'));
  if (tops.size === 1 && nested) {
    const folder = [...tops][0];
    problems.push({
      rule: 'layout',
      entry: nested,
      message: `Everything is inside the folder "${folder}/"; package the folder's contents so engine.py is at the root (dryft package ${folder}).`,
    });
  }
  problems.push({
    rule: 'entrypoint',
    message: nested
      ? `engine.py must be at the root of the archive, not at "${nested}".`
      : 'The archive has no engine.py at its root; it must export class Engine.',
  });
}

/** The single-file product: one UTF-8 `submission.py` of at most 256 KiB. */
export function validateSingleFile(filename: string, content: Uint8Array): Validation<SingleFileRule> {
  const problems: RuleProblem<SingleFileRule>[] = [];
  if (filename !== SINGLE_FILE_LIMITS.filename) {
    problems.push({
      rule: 'filename',
      entry: filename,
      message: `The file must be named submission.py, not ${JSON.stringify(filename)}.`,
    });
  }
  if (content.length > SINGLE_FILE_LIMITS.bytes) {
    problems.push({
      rule: 'size',
      message: `The file is ${content.length} bytes; the limit is ${SINGLE_FILE_LIMITS.bytes} bytes (256 KiB).`,
    });
  }
  if (!isUtf8(content)) {
    problems.push({ rule: 'text', message: 'submission.py is not valid UTF-8 text.' });
  } else if (content.length <= SINGLE_FILE_LIMITS.bytes) {
    const mod = parsePython(utf8.decode(content));
    const shown = SINGLE_FILE_LIMITS.filename;
    if (mod.error) problems.push(pythonProblem('python_syntax', shown, mod.error));
    else {
      const entry = checkSubmissionModule(mod);
      if (entry) problems.push(pythonProblem('entrypoint', shown, entry));
      for (const use of forbiddenUses(utf8.decode(content)))
        problems.push(pythonProblem('forbidden_uses', shown, use));
    }
  }
  return {
    ok: problems.length === 0,
    problems,
    verdicts: verdictsFor(SINGLE_FILE_RULES, problems),
    files:
      problems.length === 0 ? [{ path: SINGLE_FILE_LIMITS.filename, size: content.length, content }] : [],
    expandedBytes: content.length,
  };
}

/** Combines the container check with the tar check into one verdict. */
export function mergeContainerProblems(
  container: RuleProblem<ArchiveRule>[],
  tar?: Validation<ArchiveRule>,
): Validation<ArchiveRule> {
  const problems = [...container, ...(tar?.problems ?? [])];
  return finish(problems, problems.length === 0 ? (tar?.files ?? []) : [], tar?.expandedBytes ?? 0);
}

/** The upper bound of tar bytes worth decompressing: the content limit plus headers and padding. */
export const MAX_TAR_STREAM_BYTES =
  ARCHIVE_LIMITS.expandedBytes + (ARCHIVE_LIMITS.files + 2) * 3 * 512 + 1024;
