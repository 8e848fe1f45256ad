import type { LogLine } from '@dryft/libs';

/**
 * A run's log is stored as chunks: one row per stored batch (`run_log_chunks`), its lines as one
 * JSON text. A row per line cost Postgres a tuple, an index entry and the parse of four array
 * literals for every line, about four times the database CPU of the whole batch as one row
 * (bench/lines-copy.mjs, `chunk` against `unnest-prepared`), and that CPU is taken from the same
 * cores that deliver lines to watchers. The rules that keep a run's chunks one ordered log:
 * every stored line's seq is past every seq stored before it ({@link newLines}, under the run row's
 * lock or its compare-and-set), so chunks never overlap and their last seqs order them.
 */

/** One chunk row's values: its first and last seq, how many lines and the lines as JSON. */
export interface LogChunk {
  firstSeq: number;
  lastSeq: number;
  lineCount: number;
  lines: string;
}

const INT4_MAX = 2 ** 31 - 1;

/** Postgres text cannot hold NUL; a submission printing one must not lose the whole batch. */
export const stripNul = (text: string): string =>
  text.includes('\u0000') ? text.split('\u0000').join('') : text;

/**
 * What a line's text is stored as: without NUL, and a lone surrogate (not UTF-8) as U+FFFD, as
 * Postgres stored it when lines were rows; so the JSON is plain UTF-8 that Postgres's own JSON
 * functions read too (the migrations do).
 */
const storedText = (text: string): string => {
  const t = stripNul(text);
  return t.isWellFormed() ? t : t.toWellFormed();
};

/** A seq that may follow `after` in a stored log: past it, and an int4 (the batch schema makes it a positive integer). */
const follows = (seq: number, after: number): boolean => seq > after && seq <= INT4_MAX;

/**
 * The lines of a batch that are new to a run whose highest stored seq is `lastSeq`, in seq order,
 * each seq once (the first line given with it wins). A line at or below `lastSeq` was stored
 * already (an agent's resend), or came too late to keep the log in order: it is not stored. Seqs
 * outside int4 are not stored either. The common batch (every seq past the one before) is returned
 * as it is.
 */
export function newLines(lines: LogLine[], lastSeq: number): LogLine[] {
  let prev = lastSeq;
  for (const l of lines) {
    if (!follows(l.seq, prev)) return sortedNew(lines, lastSeq);
    prev = l.seq;
  }
  return lines;
}

function sortedNew(lines: LogLine[], lastSeq: number): LogLine[] {
  const bySeq = new Map<number, LogLine>();
  for (const l of lines) if (follows(l.seq, lastSeq) && !bySeq.has(l.seq)) bySeq.set(l.seq, l);
  return [...bySeq.values()].sort((a, b) => a.seq - b.seq);
}

/**
 * One chunk of lines already through {@link newLines} (non-empty). Each line is `[seq, ts, stream,
 * text]`, the timestamp rounded to the millisecond as the log always stored it.
 */
export function logChunk(lines: LogLine[]): LogChunk {
  const rows = new Array<[number, number, string, string]>(lines.length);
  for (let i = 0; i < lines.length; i++) {
    const l = lines[i];
    rows[i] = [l.seq, Math.round(l.ts), l.stream, storedText(l.text)];
  }
  return {
    firstSeq: lines[0].seq,
    lastSeq: lines[lines.length - 1].seq,
    lineCount: lines.length,
    lines: JSON.stringify(rows),
  };
}

/** A stored chunk's lines. */
export function chunkLines(json: string): LogLine[] {
  const rows = JSON.parse(json) as [number, number, LogLine['stream'], string][];
  return rows.map(([seq, ts, stream, text]) => ({ seq, ts, stream, text }));
}
