import { Injectable } from '@nestjs/common';
import {
  DEFAULT_LOG_LIMITS,
  dropNotice,
  headBytes,
  headLines,
  RollingTail,
  TERMINAL_STATUSES,
  tailBytes,
  truncateLine,
  utf8Bytes,
} from '@dryft/libs';
import type { LogLimits, LogLine, LogsPage, RunBatch } from '@dryft/libs';
import { BenchmarkRegistry } from '../benchmarks/benchmark-registry';
import { Clock } from '../common/clock';
import type { TransactionalRepository } from '../common/transactional-repository';
import { RunLogRepository } from './run-log.repository';
import type { RunEntity } from './run.entity';
import { RunsRepository } from './runs.repository';

/*
 * A run's log, in one place: its limits (the benchmark's cap), the chunks it is stored as, the
 * cap's head and rolling tail, the end of a capped log, the heads this process remembers for the
 * one-statement path, and the pages it is read back in. The statements are RunLogRepository's
 * (run-log.repository.ts); the lifecycle (run-lifecycle.service.ts) decides when each step runs
 * and sends what was stored to watchers.
 */

// --- chunks ------------------------------------------------------------------------------------

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

// --- the cap: head and tail -------------------------------------------------------------------

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

// --- heads: what this process last stored of a run ---------------------------------------------

/**
 * What this process last stored of a running run whose log is still within its head (no pending
 * tail): the figures the next batch is checked and counted against. It lets the next batch go to
 * the database as one statement that compares these figures and writes, instead of BEGIN, a
 * locked read, the insert, the update and COMMIT (five round trips before its lines can go out).
 *
 * Never trusted on its own: the statement stores nothing unless the row still holds exactly these
 * figures (another replica, a cancel, a lapsed lease or the sweeper changed it otherwise), and the
 * batch then takes the locked path, which is the rule.
 */
export interface RunHead {
  runId: string;
  agentId: string;
  benchmarkId: string;
  lastBatchSeq: number;
  lastLogSeq: number;
  logLines: number;
  /** bigint in the database, a string as TypeORM reads it. */
  logBytes: string;
}

/** The heads of the runs this process stores, oldest dropped past `limit` (a run that never ended here). */
export class RunHeads {
  private readonly heads = new Map<string, RunHead>();

  constructor(private readonly limit = 10_000) {}

  get(runId: string): RunHead | undefined {
    return this.heads.get(runId);
  }

  remember(head: RunHead): void {
    // Deleted first so that a run's latest write is also the newest entry (the Map keeps insertion order).
    this.heads.delete(head.runId);
    this.heads.set(head.runId, head);
    if (this.heads.size > this.limit) this.heads.delete(this.heads.keys().next().value!);
  }

  forget(runId: string): void {
    this.heads.delete(runId);
  }

  get size(): number {
    return this.heads.size;
  }
}

// --- the log of a run --------------------------------------------------------------------------

/** A batch stored by {@link RunLog.storeInHead}: the agent's ack and the lines to send watchers. */
export interface HeadStored {
  ackedSeq: number;
  lines: LogLine[];
}

@Injectable()
export class RunLog {
  /** Where each running run's log stands, as this process last stored it ({@link storeInHead}). */
  readonly heads = new RunHeads();

  constructor(
    private readonly store: RunLogRepository,
    private readonly runs: RunsRepository,
    private readonly registry: BenchmarkRegistry,
    private readonly clock: Clock,
  ) {}

  /** The log cap of a benchmark's runs (its definition's `logs`, or the defaults). */
  limits(benchmarkId: string): LogLimits {
    return this.registry.get(benchmarkId)?.logs ?? DEFAULT_LOG_LIMITS;
  }

  /**
   * The common batch, stored in one round trip: the log lines of a running run whose log is
   * still within its head, the next seq after what this process stored last. The statement writes
   * only if the run row still holds what this process stored ({@link RunLogRepository.recordHeadBatch});
   * null when this batch is not such a batch or the row moved on, and the locked path decides.
   */
  async storeInHead(runId: string, agentId: string, batch: RunBatch): Promise<HeadStored | null> {
    const was = this.heads.get(runId);
    if (!was || was.agentId !== agentId || batch.seq !== was.lastBatchSeq + 1) return null;
    const lines: LogLine[] = [];
    for (const entry of batch.entries) {
      if (entry.type !== 'log') return null;
      lines.push({ seq: entry.n, ts: entry.ts, stream: entry.stream, text: entry.text });
    }
    const counted = { logLines: was.logLines, logBytes: was.logBytes, logTail: null as RunEntity['logTail'] };
    const stored = capBatch(counted, newLines(lines, was.lastLogSeq), this.limits(was.benchmarkId));
    // The head is full: the locked path opens the run's tail.
    if (counted.logTail) return null;
    const now: RunHead = {
      ...was,
      lastBatchSeq: batch.seq,
      // In seq order (newLines), so the last one stored is the highest.
      lastLogSeq: stored.length ? stored[stored.length - 1].seq : was.lastLogSeq,
      logLines: counted.logLines,
      logBytes: counted.logBytes,
    };
    if (!(await this.store.recordHeadBatch(was, now, stored.length ? logChunk(stored) : null))) {
      this.heads.forget(runId);
      return null;
    }
    this.heads.remember(now);
    return { ackedSeq: now.lastBatchSeq, lines: stored };
  }

  /**
   * After the run started or the locked path answered a batch (`run`: what it stored, if it stored):
   * the next batch may take {@link storeInHead} while the run runs within its log head.
   */
  rememberHead(runId: string, run: RunEntity | undefined): void {
    if (!run || run.status !== 'running' || run.logTail || !run.agentId) {
      this.heads.forget(runId);
      return;
    }
    this.heads.remember({
      runId: run.id,
      agentId: run.agentId,
      benchmarkId: run.benchmarkId,
      lastBatchSeq: run.lastBatchSeq,
      lastLogSeq: run.lastLogSeq,
      logLines: run.logLines,
      logBytes: String(run.logBytes),
    });
  }

  /** The run ended (or its row moved on): its next batch takes the locked path. */
  forgetHead(runId: string): void {
    this.heads.forget(runId);
  }

  /**
   * A batch's lines on the locked path (inside `tx`, the run row locked): those new to the run,
   * capped; the head is stored now, lines past it wait in the run's tail for its end. Advances the
   * run's log counters and last seq (the caller writes them with the batch); returns what was stored.
   */
  async append(tx: TransactionalRepository, run: RunEntity, lines: LogLine[]): Promise<LogLine[]> {
    const stored = capBatch(run, newLines(lines, run.lastLogSeq), this.limits(run.benchmarkId));
    await this.insert(run.id, stored, run.lastLogSeq, tx);
    if (stored.length) run.lastLogSeq = stored[stored.length - 1].seq;
    return stored;
  }

  /**
   * Lines as one chunk: only those past `lastSeq`, the highest seq stored for the run, which the
   * caller holds locked; so each line is stored once and the chunks stay in order.
   */
  async insert(
    runId: string,
    lines: LogLine[],
    lastSeq: number,
    tx?: TransactionalRepository,
  ): Promise<void> {
    const fresh = newLines(lines, lastSeq);
    if (fresh.length === 0) return;
    await (tx ? this.store.within(tx) : this.store).insertChunk(runId, logChunk(fresh));
  }

  /** Stores the end of a capped log (notice and kept tail) inside the caller's transaction; returns it to emit. */
  async storeEnd(tx: TransactionalRepository, run: RunEntity): Promise<LogLine[]> {
    if (!run.logTail) return [];
    const after = run.lastLogSeq;
    const lines = endOfLog(run, this.limits(run.benchmarkId), this.clock.now().getTime());
    await this.insert(run.id, lines, after, tx);
    await this.store.within(tx).clearTail(run);
    return lines;
  }

  /**
   * Before a run ends without its agent's verdict (lost, revoked, canceled): the end of its log is
   * stored, in its own transaction with the run row locked. Returns the lines stored, to emit.
   */
  flushTail(runId: string): Promise<LogLine[]> {
    return this.runs.transaction(async (tx) => {
      const run = await tx.lock(runId);
      return run ? this.storeEnd(tx, run) : [];
    });
  }

  /** Up to `limit` stored lines past seq `after`, in order (one query over the chunks that hold them). */
  async read(runId: string, after: number, limit: number): Promise<LogLine[]> {
    const out: LogLine[] = [];
    for (const json of await this.store.chunksAfter(runId, after, limit)) {
      for (const line of chunkLines(json)) {
        if (line.seq <= after) continue;
        if (out.length === limit) return out;
        out.push(line);
      }
    }
    return out;
  }

  /** A page of a run's log as the REST API answers it: complete once the run ended and every line was read. */
  async page(run: RunEntity, after: number, limit: number): Promise<LogsPage> {
    const items = await this.read(run.id, after, limit);
    const nextAfter = items.length ? items[items.length - 1].seq : after;
    const finished = TERMINAL_STATUSES.includes(run.status);
    return { items, nextAfter, complete: finished && nextAfter >= run.lastLogSeq };
  }
}
