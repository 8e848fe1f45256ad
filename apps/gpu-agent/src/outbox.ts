import {
  BatchAck,
  describeRefusal,
  FinalRefusal,
  DEFAULT_LOG_LIMITS,
  dropNotice,
  headBytes,
  headLines,
  RollingTail,
  tailBytes,
  truncateLine,
  utf8Bytes,
} from '@dryft/libs';
import type { BatchEntry, HarnessEvent, LogLimits, RunBatch } from '@dryft/libs';

type Stream = 'out' | 'harness' | 'agent';

const MAX_ENTRIES = 5_000;
/** Rough cap on a batch's JSON size, well under the server's message limit. */
const MAX_BYTES = 2 * 1024 * 1024;

export type SendBatch = (batch: RunBatch) => Promise<unknown>;

/**
 * Log lines and harness events of one run, cut into numbered batches at most every
 * `intervalMs`, sent one at a time in order and kept until the server acknowledges them. After a
 * reconnect the server says what it stored (`ackedSeq`) and the rest is sent again; the server drops
 * duplicates by (run, seq), so a line is stored exactly once whatever the network does.
 */
export class Outbox {
  private lineNo = 0;
  private seq = 0;
  private acked = 0;
  private pending: BatchEntry[] = [];
  private pendingBytes = 0;
  private readonly unacked: RunBatch[] = [];
  private timer?: NodeJS.Timeout;
  private pumping = false;
  private idleWaiters: (() => void)[] = [];
  private closed = false;
  /** The run's log cap: the head is sent as it comes, the rest waits in a rolling tail for the end. */
  private headLines = 0;
  private headBytes = 0;
  private tail: RollingTail<{ stream: Stream; text: string; ts: number }> | null = null;

  constructor(
    readonly runId: string,
    private readonly send: SendBatch,
    private readonly connected: () => boolean,
    private readonly onStop: () => void,
    private readonly intervalMs = 50,
    private readonly log: (m: string) => void = () => undefined,
    private readonly limits: LogLimits = DEFAULT_LOG_LIMITS,
  ) {}

  get lastSeq(): number {
    return this.seq;
  }

  get ackedSeq(): number {
    return this.acked;
  }

  get lines(): number {
    return this.lineNo;
  }

  /**
   * One line, under the run's log cap (the hub stores no more, so nothing more is sent): cut to
   * `maxLineBytes` with a marker; sent now while the head has room, else kept in the rolling tail
   * that {@link endOfLog} sends when the run ends.
   */
  line(stream: Stream, raw: string): void {
    const text = truncateLine(raw, this.limits.maxLineBytes).text;
    const bytes = utf8Bytes(text);
    if (
      !this.tail &&
      this.headLines < headLines(this.limits) &&
      this.headBytes + bytes <= headBytes(this.limits)
    ) {
      this.headLines++;
      this.headBytes += bytes;
      this.push({ type: 'log', n: ++this.lineNo, ts: Date.now(), stream, text }, bytes + 64);
      return;
    }
    if (!this.tail) {
      this.tail = new RollingTail(this.limits.tailLines, tailBytes(this.limits));
      this.log(
        `run ${this.runId}: the log reached its cap (${this.limits.maxLines} lines, ${this.limits.maxBytes} bytes); keeping its last lines for the end`,
      );
    }
    this.tail.push({ stream, text, ts: Date.now() }, bytes);
  }

  /** The end of a capped log, before the verdict: one notice line where lines were dropped, then the kept tail. */
  endOfLog(): void {
    const tail = this.tail;
    this.tail = null;
    if (!tail) return;
    const kept = tail.items();
    if (tail.droppedLines > 0) {
      const text = dropNotice(tail.droppedLines, tail.droppedBytes, this.limits, kept.length);
      this.push(
        { type: 'log', n: ++this.lineNo, ts: kept[0]?.ts ?? Date.now(), stream: 'agent', text },
        text.length + 64,
      );
    }
    for (const l of kept)
      this.push(
        { type: 'log', n: ++this.lineNo, ts: l.ts, stream: l.stream, text: l.text },
        l.text.length + 64,
      );
  }

  event(event: HarnessEvent): void {
    this.push({ type: 'event', ts: Date.now(), event }, 512);
  }

  private push(entry: BatchEntry, size: number): void {
    this.pending.push(entry);
    this.pendingBytes += size;
    if (this.pending.length >= MAX_ENTRIES || this.pendingBytes >= MAX_BYTES) this.cut();
    else if (!this.timer) this.timer = setTimeout(() => this.tick(), this.intervalMs);
  }

  private tick(): void {
    this.timer = undefined;
    // While offline, lines keep gathering into one batch instead of thousands of small ones.
    if (this.connected() || this.pending.length >= MAX_ENTRIES) this.cut();
    else if (this.pending.length) this.timer = setTimeout(() => this.tick(), this.intervalMs);
  }

  /** Closes the current batch now (also used before the verdict). */
  cut(): void {
    if (this.timer) {
      clearTimeout(this.timer);
      this.timer = undefined;
    }
    if (this.pending.length === 0) return;
    this.unacked.push({ runId: this.runId, seq: ++this.seq, entries: this.pending });
    this.pending = [];
    this.pendingBytes = 0;
    void this.pump();
  }

  /** The server's word on what it has (ready ack after a reconnect, or a batch ack). */
  acknowledge(ackedSeq: number): void {
    if (ackedSeq > this.acked) this.acked = ackedSeq;
    while (this.unacked.length && this.unacked[0].seq <= this.acked) this.unacked.shift();
    if (this.unacked.length === 0) this.notifyIdle();
  }

  /** Sends what is unacknowledged, in order; safe to call any time (one pump at a time). */
  async pump(): Promise<void> {
    if (this.pumping || this.closed) return;
    this.pumping = true;
    let failures = 0;
    try {
      while (this.unacked.length && this.connected() && !this.closed) {
        const batch = this.unacked[0];
        let raw: unknown;
        try {
          raw = await this.send(batch);
        } catch (err) {
          // No ack in time (disconnect, slow server): try again; the server drops a duplicate.
          this.log(
            `batch ${batch.seq} of run ${this.runId} not acknowledged (${(err as Error).message}); resending`,
          );
          failures++;
          await new Promise((r) => setTimeout(r, Math.min(5_000, 100 * 2 ** failures)));
          continue;
        }
        const final = FinalRefusal.safeParse(raw);
        if (final.success) {
          // The hub will never store this batch as sent: resending cannot help, so stop here.
          this.log(
            `run ${this.runId}: the hub refused batch ${batch.seq} for good (${describeRefusal(final.data)}); not resending, stopping the run`,
          );
          this.unacked.length = 0;
          this.notifyIdle();
          this.onStop();
          break;
        }
        const ack = BatchAck.safeParse(raw);
        if (!ack.success) {
          this.log(`run ${this.runId}: server refused batch ${batch.seq}: ${JSON.stringify(raw)}`);
          failures++;
          await new Promise((r) => setTimeout(r, Math.min(5_000, 200 * 2 ** failures)));
          continue;
        }
        failures = 0;
        this.acknowledge(ack.data.ackedSeq);
        if (ack.data.stop) {
          this.onStop();
          // The run is over for the server: nothing more will be stored.
          this.unacked.length = 0;
          this.notifyIdle();
          break;
        }
        if (!ack.data.ok && ack.data.ackedSeq < batch.seq - 1) {
          this.log(
            `run ${this.runId}: server has batches up to ${ack.data.ackedSeq} only, but ${batch.seq - 1} were acknowledged before`,
          );
          await new Promise((r) => setTimeout(r, 500));
        }
      }
    } finally {
      this.pumping = false;
    }
    if (this.unacked.length && this.connected() && !this.closed) void this.pump();
  }

  /** Resolves when every batch cut so far is acknowledged. */
  drained(): Promise<void> {
    if (this.unacked.length === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  close(): void {
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
    this.notifyIdle();
  }

  private notifyIdle(): void {
    const waiters = this.idleWaiters;
    this.idleWaiters = [];
    for (const w of waiters) w();
  }
}
