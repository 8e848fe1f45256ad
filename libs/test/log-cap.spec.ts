import { describe, expect, it } from 'vitest';
import {
  BenchmarkDefinition,
  dropNotice,
  LogLimits,
  RollingTail,
  truncateLine,
  utf8Bytes,
} from '../src/index';

describe('log cap rules', () => {
  it('counts UTF-8 bytes like Buffer does', () => {
    for (const s of ['', 'abc', 'é', '€', '😀', 'a😀é€\ud800x', 'x'.repeat(1000)])
      expect(utf8Bytes(s)).toBe(Buffer.byteLength(s, 'utf8'));
  });

  it('cuts an over-long line on a character boundary, marker included, and leaves short ones alone', () => {
    expect(truncateLine('short', 256)).toEqual({ text: 'short', truncated: false });
    const cut = truncateLine('😀'.repeat(10_000), 1024);
    expect(cut.truncated).toBe(true);
    expect(utf8Bytes(cut.text)).toBeLessThanOrEqual(1024);
    expect(cut.text).toMatch(/^(😀)+ … \[line cut: this run's log keeps 1,024 bytes per line\]$/);
  });

  it('keeps the last lines by count and by bytes and counts what falls out', () => {
    const tail = new RollingTail<number>(3, 100);
    for (let i = 0; i < 5000; i++) tail.push(i, 10);
    expect(tail.items()).toEqual([4997, 4998, 4999]);
    expect(tail.droppedLines).toBe(4997);
    expect(tail.droppedBytes).toBe(49_970);
    tail.push(5000, 95);
    expect(tail.items()).toEqual([5000]);
  });

  it('says how much was dropped and what the cap is', () => {
    const l = LogLimits.parse({});
    expect(dropNotice(900_001, 12 * 1024 * 1024, l, 1000)).toBe(
      "… 900,001 lines (12.0 MB) dropped here: this run's log is capped at 100,000 lines and 32.0 MB (the first lines and the last 1,000 are kept). The run was judged on all of its output.",
    );
  });

  it('defaults in a definition and refuses a tail that takes half of the lines', () => {
    expect(LogLimits.parse({})).toEqual({
      maxLines: 100_000,
      maxBytes: 32 * 1024 * 1024,
      maxLineBytes: 16_384,
      tailLines: 1000,
    });
    const bad = LogLimits.safeParse({ maxLines: 1000, tailLines: 600 });
    expect(bad.success).toBe(false);
    expect(LogLimits.safeParse({ maxLineBytes: 20_000 }).success).toBe(false);
    expect(BenchmarkDefinition.options.length).toBeGreaterThan(0);
  });
});
