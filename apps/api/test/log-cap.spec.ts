import { describe, expect, it } from 'vitest';
import type { LogLine } from '@dryft/libs';
import { capBatch, endOfLog } from '../src/runs/run-log';
import type { RunEntity } from '../src/runs/run.entity';

const limits = { maxLines: 100, maxBytes: 1024 * 1024, maxLineBytes: 256, tailLines: 10 };
const run = () => ({ logLines: 0, logBytes: '0', logTail: null, lastLogSeq: 0 }) as unknown as RunEntity;
const lines = (from: number, n: number, text = (i: number) => `line ${i}`): LogLine[] =>
  Array.from({ length: n }, (_, k) => ({ seq: from + k, ts: 1, stream: 'out', text: text(from + k) }));

/** What the lifecycle does with a batch: store what capBatch returns, track the last stored seq. */
function feed(r: RunEntity, batch: LogLine[]): LogLine[] {
  const stored = capBatch(r, batch, limits);
  for (const l of stored) if (l.seq > r.lastLogSeq) r.lastLogSeq = l.seq;
  return stored;
}

describe('the API log cap', () => {
  it('stores the head, holds the rest in a rolling tail, and ends with one notice and the last lines, without a gap', () => {
    const r = run();
    const stored = [...feed(r, lines(1, 50)), ...feed(r, lines(51, 950))];
    expect(stored.map((l) => l.seq)).toEqual(Array.from({ length: 89 }, (_, i) => i + 1));
    expect(r.logTail!.lines.length).toBe(11);
    const end = endOfLog(r, limits, 0);
    expect(end.map((l) => l.seq)).toEqual(Array.from({ length: 11 }, (_, i) => 90 + i));
    expect(end[0].stream).toBe('system');
    expect(end[0].text).toMatch(/^… 901 lines \(\d+ KB\) dropped here/);
    expect(end.slice(1).map((l) => l.text)).toEqual(Array.from({ length: 10 }, (_, i) => `line ${991 + i}`));
    expect(r.logLines).toBe(100);
    expect(r.logTail).toBeNull();
    expect(Number(r.logBytes)).toBe([...stored, ...end].reduce((n, l) => n + Buffer.byteLength(l.text), 0));
  });

  it("stores a cooperating agent's notice and tail as they are (nothing more dropped)", () => {
    const r = run();
    feed(r, lines(1, 89));
    feed(
      r,
      lines(90, 11, (i) => (i === 90 ? '… agent notice' : `tail ${i}`)),
    );
    const end = endOfLog(r, limits, 0);
    expect(end.map((l) => [l.seq, l.text])).toEqual(
      Array.from({ length: 11 }, (_, k) => [90 + k, k === 0 ? '… agent notice' : `tail ${90 + k}`]),
    );
  });

  it('cuts over-long lines and stops the head at the byte budget', () => {
    const r = run();
    const stored = feed(
      r,
      lines(1, 3, () => 'y'.repeat(10_000)),
    );
    expect(stored.every((l) => Buffer.byteLength(l.text) <= 256 && l.text.includes('line cut'))).toBe(true);
    const small = { ...limits, maxBytes: 64 * 1024, maxLineBytes: 16_384 };
    const r2 = run();
    const head = capBatch(
      r2,
      lines(1, 95, () => 'z'.repeat(1000)),
      small,
    );
    // 64 KB less a 16 KB tail budget and 1 KB: 48 lines of 1,000 bytes.
    expect(head.length).toBe(48);
    expect(r2.logTail!.lines.length).toBe(11);
  });

  it('leaves a log under the cap untouched', () => {
    const r = run();
    expect(feed(r, lines(1, 40))).toHaveLength(40);
    expect(endOfLog(r, limits, 0)).toEqual([]);
  });
});

describe('the byte count of the API log cap', () => {
  it('Buffer.byteLength counts as utf8Bytes (libs) does, lone surrogates included', async () => {
    const { utf8Bytes } = await import('@dryft/libs');
    let s = 7;
    const next = () => ((s = (s * 1664525 + 1013904223) >>> 0), s / 2 ** 32);
    const chars = [
      'a',
      'é',
      '€',
      '😀',
      '\u0000',
      '\ud800',
      '\udbff',
      '\udc00',
      '\udfff',
      '\uffff',
      '\u07ff',
      '\u0800',
    ];
    for (let round = 0; round < 2000; round++) {
      let text = '';
      const len = Math.floor(next() * 12);
      for (let i = 0; i < len; i++) text += chars[Math.floor(next() * chars.length)];
      expect(Buffer.byteLength(text)).toBe(utf8Bytes(text));
    }
  });

  it('accounts each stored line at its UTF-8 bytes and stores lines not cut as they came', () => {
    const r = run();
    const batch = lines(1, 5, (i) => `\ud800 é 😀 ${i} \udc00`);
    const stored = feed(r, batch);
    expect(stored).toEqual(batch);
    expect(Number(r.logBytes)).toBe(batch.reduce((n, l) => n + Buffer.byteLength(l.text), 0));
    expect(Number(r.logBytes)).toBe(5 * Buffer.from(batch[0].text).length);
  });
});
