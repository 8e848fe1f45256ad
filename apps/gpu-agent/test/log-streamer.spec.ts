import type { RunBatch } from '@dryft/libs';
import { describe, expect, it } from 'vitest';
import { LogStreamer } from '../src/log-streamer';
import { Outbox } from '../src/outbox';

type Log = { n: number; stream: string; text: string };

/** The hub's side of the socket: stores each batch in order and acknowledges it. */
function hub() {
  const batches: RunBatch[] = [];
  return {
    batches,
    send: async (b: RunBatch) => {
      batches.push(b);
      return { ok: true, ackedSeq: b.seq };
    },
    lines: (): Log[] =>
      batches.flatMap((b) =>
        b.entries.filter((e) => e.type === 'log').map((e) => e as unknown as Log & { type: 'log' }),
      ),
  };
}

const tick = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('LogStreamer: the terminal as numbered lines in numbered batches', () => {
  it('joins lines cut across chunks, drops the carriage return, flushes the last partial line', async () => {
    const h = hub();
    const outbox = new Outbox(
      'run-a',
      h.send,
      () => true,
      () => undefined,
      5,
    );
    const log = new LogStreamer(outbox);
    log.write('loading en');
    log.write('gine\r\nmeasu');
    log.write('ring\n\nb1-p16: 600 tok/s\r\nno newline at the end');
    log.flush();
    outbox.cut();
    await outbox.drained();
    expect(h.lines().map((l) => [l.n, l.stream, l.text])).toEqual([
      [1, 'out', 'loading engine'],
      [2, 'out', 'measuring'],
      [3, 'out', ''],
      [4, 'out', 'b1-p16: 600 tok/s'],
      [5, 'out', 'no newline at the end'],
    ]);
    outbox.close();
  });

  it('sends a line past 16 KiB cut at once and skips its rest up to its newline', async () => {
    const h = hub();
    const outbox = new Outbox(
      'run-b',
      h.send,
      () => true,
      () => undefined,
      5,
    );
    const log = new LogStreamer(outbox);
    log.write('x'.repeat(10_000));
    log.write('x'.repeat(10_000)); // past the cap: sent now, cut
    log.write('y'.repeat(20_000)); // the same line still: dropped
    log.write('z\nnext line\n');
    log.flush();
    outbox.cut();
    await outbox.drained();
    const lines = h.lines();
    expect(lines.map((l) => l.n)).toEqual([1, 2]);
    expect(lines[0].text).toMatch(/^x+ … \[line cut: this run's log keeps 16,384 bytes per line\]$/);
    expect(lines[0].text.split(' … ')[0]).toMatch(/^x+$/);
    expect(lines[1].text).toBe('next line');
    outbox.close();
  });

  it('gathers what comes within one interval into one batch; batches are numbered 1, 2, … in order', async () => {
    const h = hub();
    const outbox = new Outbox(
      'run-c',
      h.send,
      () => true,
      () => undefined,
      30,
    );
    const log = new LogStreamer(outbox);
    for (let round = 0; round < 3; round++) {
      for (let i = 0; i < 10; i++) log.write(`round ${round} line ${i}\n`);
      await tick(80); // past the interval: the batch is cut and sent
    }
    log.write('the end');
    log.flush();
    outbox.cut(); // before the verdict: the last lines go in a batch of their own now
    await outbox.drained();
    expect(h.batches.map((b) => b.seq)).toEqual([1, 2, 3, 4]);
    expect(h.batches.map((b) => b.entries.length)).toEqual([10, 10, 10, 1]);
    expect(h.lines().map((l) => l.n)).toEqual(Array.from({ length: 31 }, (_, i) => i + 1));
    expect(outbox.lastSeq).toBe(4);
    expect(outbox.ackedSeq).toBe(4);
    outbox.close();
  });

  it('keeps the last frame of a carriage-return progress bar, never the frames glued together', async () => {
    const h = hub();
    const outbox = new Outbox(
      'run-d',
      h.send,
      () => true,
      () => undefined,
      5,
    );
    const log = new LogStreamer(outbox);
    // pip/tqdm: 10,000 frames of one line (well past the 16 KiB cut if they were kept), cut anywhere.
    let bar = '';
    for (let i = 0; i <= 10_000; i++)
      bar += `\r${String(Math.floor(i / 100)).padStart(3)}%|${'#'.repeat(Math.floor(i / 500))}| ${i}/10000`;
    for (let at = 0; at < bar.length; at += 777) log.write(bar.slice(at, at + 777));
    log.write('\r\ndone\r\n');
    // A frame still pending when a chunk ends is kept until the next frame replaces it.
    log.write('step 1/2\r');
    log.write('step 2/2\r');
    log.write('\n');
    log.write('last\rframe at the end');
    log.flush();
    outbox.cut();
    await outbox.drained();
    expect(h.lines().map((l) => [l.n, l.text])).toEqual([
      [1, `100%|${'#'.repeat(20)}| 10000/10000`],
      [2, 'done'],
      [3, 'step 2/2'],
      [4, 'frame at the end'],
    ]);
    outbox.close();
  });
});
