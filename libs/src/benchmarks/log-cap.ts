import { z } from 'zod';

/**
 * How much of a run's log is stored (`logs:` in a benchmark definition). The first lines are
 * streamed and stored as they come (the head); once the head is full, later lines go to a rolling
 * tail of the last `tailLines`, stored when the run ends, after one notice line that says how many
 * lines and bytes were dropped between the two. Lines longer than `maxLineBytes` are cut, with a
 * marker. The verdict and the result are never affected. Agents apply the same rules before
 * sending; the API applies them again, since agents are not trusted to.
 */
export const LogLimits = z
  .object({
    /** Lines stored per run, at most (the notice line included). */
    maxLines: z.number().int().min(100).default(100_000),
    /** UTF-8 bytes of log text stored per run, at most (lines as stored, after truncation). */
    maxBytes: z
      .number()
      .int()
      .min(64 * 1024)
      .default(32 * 1024 * 1024),
    /** Longer lines are cut to this many bytes, a marker included (the protocol carries 16,384 at most). */
    maxLineBytes: z.number().int().min(256).max(16_384).default(16_384),
    /** Of `maxLines`, how many of the last lines are kept for the end of the log. */
    tailLines: z.number().int().nonnegative().default(1_000),
  })
  .refine((l) => l.tailLines * 2 < l.maxLines, {
    message: 'tailLines must be less than half of maxLines',
    path: ['tailLines'],
  });
export type LogLimits = z.infer<typeof LogLimits>;

export const DEFAULT_LOG_LIMITS: LogLimits = LogLimits.parse({});

/** The byte budget of the tail: a quarter of the run's bytes, at most 2 MiB. */
export function tailBytes(l: LogLimits): number {
  return Math.min(Math.floor(l.maxBytes / 4), 2 * 1024 * 1024);
}

/** Lines of the head: what is left of `maxLines` after the tail and the notice line. */
export function headLines(l: LogLimits): number {
  return l.maxLines - l.tailLines - 1;
}

/** Bytes of the head: what is left of `maxBytes` after the tail and the notice line. */
export function headBytes(l: LogLimits): number {
  return l.maxBytes - tailBytes(l) - 1024;
}

/** UTF-8 length of a string, without allocating (browser-safe). */
export function utf8Bytes(text: string): number {
  let n = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c < 0x80) n += 1;
    else if (c < 0x800) n += 2;
    else if (c >= 0xd800 && c <= 0xdbff && i + 1 < text.length) {
      const d = text.charCodeAt(i + 1);
      if (d >= 0xdc00 && d <= 0xdfff) {
        n += 4;
        i++;
      } else n += 3;
    } else n += 3;
  }
  return n;
}

const fmt = (n: number) => n.toLocaleString('en-US');

/** A byte count for people: 45.2 MB, 812 KB, 96 bytes. */
export function formatBytes(n: number): string {
  if (n >= 1024 * 1024) return `${(n / (1024 * 1024)).toFixed(1)} MB`;
  if (n >= 1024) return `${Math.round(n / 1024)} KB`;
  return `${n} bytes`;
}

/** Cuts a line to `maxLineBytes` UTF-8 bytes (marker included), on a character boundary. */
export function truncateLine(text: string, maxLineBytes: number): { text: string; truncated: boolean } {
  if (text.length <= maxLineBytes / 3 || utf8Bytes(text) <= maxLineBytes) return { text, truncated: false };
  const marker = ` … [line cut: this run's log keeps ${fmt(maxLineBytes)} bytes per line]`;
  const budget = maxLineBytes - utf8Bytes(marker);
  let used = 0;
  let end = 0;
  while (end < text.length) {
    const c = text.charCodeAt(end);
    const pair = c >= 0xd800 && c <= 0xdbff && end + 1 < text.length;
    const w = c < 0x80 ? 1 : c < 0x800 ? 2 : pair ? 4 : 3;
    if (used + w > budget) break;
    used += w;
    end += pair ? 2 : 1;
  }
  return { text: text.slice(0, end) + marker, truncated: true };
}

/** The one line that stands where lines were dropped. */
export function dropNotice(
  droppedLines: number,
  droppedBytes: number,
  l: LogLimits,
  keptTail: number,
): string {
  return (
    `… ${fmt(droppedLines)} lines (${formatBytes(droppedBytes)}) dropped here: this run's log is capped at ` +
    `${fmt(l.maxLines)} lines and ${formatBytes(l.maxBytes)} (the first lines and the last ${fmt(keptTail)} are kept). ` +
    'The run was judged on all of its output.'
  );
}

/** A rolling window of the last lines (by count and bytes) that counts what falls out of it. */
export class RollingTail<T> {
  private buf: { item: T; bytes: number }[] = [];
  private start = 0;
  bytes = 0;
  droppedLines = 0;
  droppedBytes = 0;

  constructor(
    private readonly maxLines: number,
    private readonly maxBytes: number,
  ) {}

  get length(): number {
    return this.buf.length - this.start;
  }

  /** The lines kept, oldest first. */
  items(): T[] {
    return this.buf.slice(this.start).map((e) => e.item);
  }

  push(item: T, bytes: number): void {
    this.buf.push({ item, bytes });
    this.bytes += bytes;
    while (this.length > this.maxLines || (this.bytes > this.maxBytes && this.length > 0)) {
      const old = this.buf[this.start++];
      this.bytes -= old.bytes;
      this.droppedBytes += old.bytes;
      this.droppedLines++;
    }
    if (this.start > 1024 && this.start * 2 > this.buf.length) {
      this.buf = this.buf.slice(this.start);
      this.start = 0;
    }
  }
}
