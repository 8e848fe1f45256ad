import { dropReplacedFrames, lastFrame } from '@dryft/libs';
import type { Outbox } from './outbox';

/** The longest line kept whole; the hub stores no more of one (BatchEntry's `text`). */
const MAX_LINE = 16_384;

/**
 * The harness's terminal (its stdout and stderr, merged by the pty) as log lines: chunks arrive cut
 * anywhere, so the part after the last newline waits for the next chunk; a line that grows past
 * MAX_LINE is sent cut at once and the rest of it dropped, so one endless line cannot hold memory.
 * A carriage return redraws the line (a tqdm or pip progress bar): only its last frame is kept, as
 * the frames come, so a bar of thousands of frames is one short line, not 16 KiB of frames.
 * Each line goes to the run's outbox, which numbers it and sends it in numbered batches.
 */
export class LogStreamer {
  private partial = '';
  /** Inside an over-long line that was already sent cut: its rest is skipped. */
  private cutLine = false;

  constructor(private readonly outbox: Pick<Outbox, 'line'>) {}

  write(data: string): void {
    const text = this.partial + data;
    const parts = text.split('\n');
    this.partial = dropReplacedFrames(parts.pop() ?? '');
    for (const part of parts) {
      // The rest of a line already sent cut (over the cap per line) is dropped.
      if (this.cutLine) this.cutLine = false;
      else this.outbox.line('out', lastFrame(part));
    }
    if (this.partial.length > MAX_LINE) {
      // An over-long line: sent now, cut with a marker, and the rest of it skipped until its newline.
      if (!this.cutLine) this.outbox.line('out', this.partial);
      this.cutLine = true;
      this.partial = '';
    }
  }

  /** The process ended: a last line without its newline is still a line. */
  flush(): void {
    if (this.partial && !this.cutLine) this.outbox.line('out', lastFrame(this.partial));
    this.partial = '';
    this.cutLine = false;
  }
}
