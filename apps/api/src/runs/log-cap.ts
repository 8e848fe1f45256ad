import {
  dropNotice,
  headBytes,
  headLines,
  RollingTail,
  tailBytes,
  truncateLine,
  utf8Bytes,
} from '@dryft/libs';
import type { LogLimits, LogLine } from '@dryft/libs';
import type { RunEntity } from './run.entity';

/**
 * The API's side of the log cap (libs/src/benchmarks/log-cap.ts), which agents are not trusted to
 * apply: lines are cut to `maxLineBytes`; the head is stored and streamed as it comes; past it, lines
 * go to the run's rolling tail (`runs.log_tail`), stored only when the run ends ({@link endOfLog}).
 * Live watchers get exactly the lines stored, when they are stored. Mutates the run's accounting;
 * lines not cut are returned as the same objects as `incoming` (the caller's, not to be reused).
 */
export function capBatch(
  run: Pick<RunEntity, 'logLines' | 'logBytes' | 'logTail'>,
  incoming: LogLine[],
  l: LogLimits,
): LogLine[] {
  const store: LogLine[] = [];
  let tail: RollingTail<LogLine> | null = null;
  let bytes = Number(run.logBytes);
  const maxHeadLines = headLines(l);
  const maxHeadBytes = headBytes(l);
  for (const line of incoming) {
    const text = truncateLine(line.text, l.maxLineBytes).text;
    // Buffer.byteLength counts as utf8Bytes does (a lone surrogate as the 3 bytes of U+FFFD; see
    // apps/api/test/log-cap.spec.ts), natively: this runs for every line a hub stores.
    const b = Buffer.byteLength(text);
    // A line not cut is stored as it came (the caller's own object), not copied.
    const kept = text === line.text ? line : { ...line, text };
    if (!run.logTail && !tail && run.logLines < maxHeadLines && bytes + b <= maxHeadBytes) {
      store.push(kept);
      run.logLines++;
      bytes += b;
      continue;
    }
    tail ??= openTail(run, l);
    tail.push(kept, b);
  }
  run.logBytes = String(bytes);
  if (tail) run.logTail = closeTail(tail);
  return store;
}

/**
 * The end of a capped log, numbered after the last stored line: the kept tail, after one notice
 * line when lines were dropped (the notice takes the place of the oldest kept line if the tail is
 * full). Empty when the log never went past its head. Clears the pending tail.
 */
export function endOfLog(run: RunEntity, l: LogLimits, now: number): LogLine[] {
  const pending = run.logTail;
  run.logTail = null;
  if (!pending || pending.lines.length + pending.droppedLines === 0) return [];
  let kept = pending.lines;
  let droppedLines = pending.droppedLines;
  let droppedBytes = pending.droppedBytes;
  const out: Omit<LogLine, 'seq'>[] = [];
  if (droppedLines > 0) {
    if (kept.length > l.tailLines) {
      droppedLines += kept.length - l.tailLines;
      for (const x of kept.slice(0, kept.length - l.tailLines)) droppedBytes += utf8Bytes(x.text);
      kept = kept.slice(kept.length - l.tailLines);
    }
    out.push({
      ts: kept[0]?.ts ?? now,
      stream: 'system',
      text: dropNotice(droppedLines, droppedBytes, l, kept.length),
    });
  }
  out.push(...kept.map(({ seq: _s, ...rest }) => rest));
  const lines = out.map((x, i) => ({ ...x, seq: run.lastLogSeq + i + 1 }));
  run.logLines += lines.length;
  run.logBytes = String(Number(run.logBytes) + lines.reduce((n, x) => n + utf8Bytes(x.text), 0));
  if (lines.length) run.lastLogSeq = lines[lines.length - 1].seq;
  return lines;
}

/** The tail holds one line more than `tailLines` (an agent's own notice) and 1 KB more bytes. */
function openTail(run: Pick<RunEntity, 'logTail'>, l: LogLimits): RollingTail<LogLine> {
  const tail = new RollingTail<LogLine>(l.tailLines + 1, tailBytes(l) + 1024);
  const prev = run.logTail;
  if (prev) {
    for (const line of prev.lines) tail.push(line, utf8Bytes(line.text));
    tail.droppedLines += prev.droppedLines;
    tail.droppedBytes += prev.droppedBytes;
  }
  return tail;
}

function closeTail(tail: RollingTail<LogLine>) {
  return {
    lines: tail.items(),
    bytes: tail.bytes,
    droppedLines: tail.droppedLines,
    droppedBytes: tail.droppedBytes,
  };
}
