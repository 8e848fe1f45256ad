import type { LogLine } from '@dryft/libs';
import { stripAnsi } from './ansi';

/** One displayed row: a log line, or one part of a line whose text holds newlines (a traceback). */
export interface LogRow {
  seq: number;
  ts: number;
  stream: LogLine['stream'];
  text: string;
  /** 0 for the first row of its line; continuation rows show no line number. */
  part: number;
}

/**
 * The run page's log: lines kept in seq order, each seq once, whatever order or how many times
 * the socket replay, the live stream and REST gap-fills deliver them; and the rows they display as
 * (fixed-height rows for a virtualized list, so a line with newlines becomes several rows).
 */
export class LogBuffer {
  private lines: LogLine[] = [];
  private rows: LogRow[] = [];
  private plain: (string | undefined)[] = [];
  /** Bumped on every change, so views can re-derive. */
  version = 0;

  /** Number of log lines (seqs). */
  get length(): number {
    return this.lines.length;
  }

  /** Number of display rows. */
  get rowCount(): number {
    return this.rows.length;
  }

  /** The highest seq held: pass it as `afterSeq` when (re)joining. */
  get lastSeq(): number {
    return this.lines.length ? this.lines[this.lines.length - 1].seq : 0;
  }

  at(i: number): LogLine {
    return this.lines[i];
  }

  row(i: number): LogRow {
    return this.rows[i];
  }

  all(): readonly LogLine[] {
    return this.lines;
  }

  plainText(rowIndex: number): string {
    let p = this.plain[rowIndex];
    if (p === undefined) {
      p = stripAnsi(this.rows[rowIndex].text);
      this.plain[rowIndex] = p;
    }
    return p;
  }

  private pushRows(line: LogLine): void {
    const text = line.text.endsWith('\n') ? line.text.slice(0, -1) : line.text;
    const parts = text.includes('\n') ? text.split('\n') : [text];
    parts.forEach((t, part) => {
      this.rows.push({ seq: line.seq, ts: line.ts, stream: line.stream, text: t, part });
      this.plain.push(undefined);
    });
  }

  /** Adds lines, dropping duplicates; returns how many were new. */
  add(incoming: readonly LogLine[]): number {
    let added = 0;
    let reordered = false;
    for (const line of incoming) {
      if (line.seq > this.lastSeq) {
        this.lines.push(line);
        if (!reordered) this.pushRows(line);
        added++;
        continue;
      }
      // Out of order: binary search for its place, skip if present.
      let lo = 0;
      let hi = this.lines.length;
      while (lo < hi) {
        const mid = (lo + hi) >> 1;
        if (this.lines[mid].seq < line.seq) lo = mid + 1;
        else hi = mid;
      }
      if (lo < this.lines.length && this.lines[lo].seq === line.seq) continue;
      this.lines.splice(lo, 0, line);
      reordered = true;
      added++;
    }
    if (reordered) {
      this.rows = [];
      this.plain = [];
      for (const line of this.lines) this.pushRows(line);
    }
    if (added) this.version++;
    return added;
  }

  /** Indexes of rows whose plain text contains the query (case-insensitive). */
  search(query: string): number[] {
    const q = query.toLowerCase();
    const out: number[] = [];
    if (!q) return out;
    for (let i = 0; i < this.rows.length; i++) if (this.plainText(i).toLowerCase().includes(q)) out.push(i);
    return out;
  }

  /** The whole log as plain text, for download. */
  toText(): string {
    const parts: string[] = new Array(this.rows.length);
    for (let i = 0; i < this.rows.length; i++) parts[i] = this.plainText(i);
    return parts.join('\n') + (parts.length ? '\n' : '');
  }
}

/** Which rows of a fixed-height list are worth rendering. */
export function visibleWindow(
  scrollTop: number,
  viewport: number,
  rowHeight: number,
  total: number,
  overscan = 20,
) {
  const first = Math.max(0, Math.floor(scrollTop / rowHeight) - overscan);
  const last = Math.min(total, Math.ceil((scrollTop + viewport) / rowHeight) + overscan);
  return { first, last, offset: first * rowHeight, height: total * rowHeight };
}
