import type { LogLine } from '@dryft/libs';
import { stripAnsi } from './ansi';

/**
 * The run page's log: lines kept in seq order, each seq once, whatever order or how many times
 * the socket replay, the live stream and REST gap-fills deliver them.
 */
export class LogBuffer {
  private lines: LogLine[] = [];
  private plain: (string | undefined)[] = [];
  /** Bumped on every change, so views can re-derive. */
  version = 0;

  get length(): number {
    return this.lines.length;
  }

  /** The highest seq held: pass it as `afterSeq` when (re)joining. */
  get lastSeq(): number {
    return this.lines.length ? this.lines[this.lines.length - 1].seq : 0;
  }

  at(i: number): LogLine {
    return this.lines[i];
  }

  all(): readonly LogLine[] {
    return this.lines;
  }

  plainText(i: number): string {
    let p = this.plain[i];
    if (p === undefined) {
      p = stripAnsi(this.lines[i].text);
      this.plain[i] = p;
    }
    return p;
  }

  /** Adds lines, dropping duplicates; returns how many were new. */
  add(incoming: readonly LogLine[]): number {
    let added = 0;
    for (const line of incoming) {
      const last = this.lastSeq;
      if (line.seq > last) {
        this.lines.push(line);
        this.plain.push(undefined);
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
      this.plain.splice(lo, 0, undefined);
      added++;
    }
    if (added) this.version++;
    return added;
  }

  /** Ranges of missing seqs between 1 and lastSeq, as [afterSeq, beforeSeq) pairs to fetch. */
  gaps(): { after: number; before: number }[] {
    const out: { after: number; before: number }[] = [];
    let expected = 1;
    for (const line of this.lines) {
      if (line.seq > expected) out.push({ after: expected - 1, before: line.seq });
      expected = line.seq + 1;
    }
    return out;
  }

  /** Indexes of lines whose plain text contains the query (case-insensitive). */
  search(query: string): number[] {
    const q = query.toLowerCase();
    const out: number[] = [];
    if (!q) return out;
    for (let i = 0; i < this.lines.length; i++) if (this.plainText(i).toLowerCase().includes(q)) out.push(i);
    return out;
  }

  /** The whole log as plain text, for download. */
  toText(): string {
    const parts: string[] = new Array(this.lines.length);
    for (let i = 0; i < this.lines.length; i++) parts[i] = this.plainText(i);
    return parts.join('\n') + (parts.length ? '\n' : '');
  }
}

/** Which rows of a fixed-height list are worth rendering. */
export function visibleWindow(scrollTop: number, viewport: number, rowHeight: number, total: number, overscan = 20) {
  const first = Math.max(0, Math.floor(scrollTop / rowHeight) - overscan);
  const last = Math.min(total, Math.ceil((scrollTop + viewport) / rowHeight) + overscan);
  return { first, last, offset: first * rowHeight, height: total * rowHeight };
}
