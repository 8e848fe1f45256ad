import { describe, expect, it } from 'vitest';
import type { LogLine } from '@dryft/libs';
import { chunkLines, logChunk, newLines } from '../src/runs/run-log';

const line = (seq: number, text = `line ${seq}`, ts = 1_764_500_000_000 + seq): LogLine => ({
  seq,
  ts,
  stream: 'out',
  text,
});

describe('newLines (what of a batch a run stores)', () => {
  it('keeps a batch of lines past the stored ones as it is, the same array', () => {
    const lines = [line(4), line(5), line(9)];
    expect(newLines(lines, 3)).toBe(lines);
  });

  it('drops lines at or below the highest stored seq: a resend, or too late for the order', () => {
    expect(newLines([line(2), line(3), line(4), line(5)], 3).map((l) => l.seq)).toEqual([4, 5]);
    expect(newLines([line(1), line(2)], 3)).toEqual([]);
  });

  it('puts lines out of order into seq order, and keeps the first line given with a seq', () => {
    const kept = newLines([line(7, 'seven'), line(5, 'five'), line(7, 'seven again'), line(6, 'six')], 4);
    expect(kept.map((l) => [l.seq, l.text])).toEqual([
      [5, 'five'],
      [6, 'six'],
      [7, 'seven'],
    ]);
  });

  it('stores no seq Postgres could not hold (int4)', () => {
    expect(newLines([line(1), line(2 ** 31), line(2)], 0).map((l) => l.seq)).toEqual([1, 2]);
  });
});

describe('logChunk / chunkLines (a chunk of lines as one JSON text)', () => {
  it('gives back every line, the timestamp to the millisecond, the text as Postgres text holds it', () => {
    const lines: LogLine[] = [
      { seq: 1, ts: 1_764_500_000_000.4, stream: 'out', text: 'tab\there, "quotes", \\ and a newline\n' },
      { seq: 2, ts: 2.5, stream: 'harness', text: 'nul \u0000 inside' },
      { seq: 5, ts: 0, stream: 'agent', text: 'ünïcödé 中文 🚀 and a lone surrogate \ud800 \udc00' },
      { seq: 6, ts: 2 ** 53 - 1, stream: 'system', text: '' },
    ];
    const chunk = logChunk(lines);
    expect(chunk).toMatchObject({ firstSeq: 1, lastSeq: 6, lineCount: 4 });
    expect(chunkLines(chunk.lines)).toEqual([
      { seq: 1, ts: 1_764_500_000_000, stream: 'out', text: 'tab\there, "quotes", \\ and a newline\n' },
      { seq: 2, ts: 3, stream: 'harness', text: 'nul  inside' },
      { seq: 5, ts: 0, stream: 'agent', text: 'ünïcödé 中文 🚀 and a lone surrogate \ufffd \ufffd' },
      { seq: 6, ts: 2 ** 53 - 1, stream: 'system', text: '' },
    ]);
    // Plain UTF-8 for Postgres's own JSON functions: no NUL and no lone surrogate escaped in it.
    expect(chunk.lines).not.toMatch(/\\u0000|\\ud[89a-f]/i);
  });

  it('reads the JSON Postgres writes (json_agg, as the migration moves stored lines)', () => {
    expect(chunkLines('[[1, 1764500000000, "out", "a"], \n [2, 1764500000001, "system", "b"]]')).toEqual([
      { seq: 1, ts: 1764500000000, stream: 'out', text: 'a' },
      { seq: 2, ts: 1764500000001, stream: 'system', text: 'b' },
    ]);
  });
});
