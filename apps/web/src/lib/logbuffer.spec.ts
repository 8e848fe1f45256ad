import type { LogLine } from '@dryft/libs';
import { describe, expect, it } from 'vitest';
import { LogBuffer, visibleWindow } from './logbuffer';

const line = (seq: number, text = `line ${seq}`): LogLine => ({
  seq,
  ts: 1_700_000_000_000 + seq,
  stream: 'out',
  text,
});
const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => line(from + i));

describe('LogBuffer', () => {
  it('keeps each seq once when the replay and the live stream overlap', () => {
    const b = new LogBuffer();
    expect(b.add(range(1, 50))).toBe(50);
    // A reconnect replays after the last seq the server had sent, overlapping what arrived live.
    expect(b.add(range(40, 80))).toBe(30);
    expect(b.add(range(1, 80))).toBe(0);
    expect(b.length).toBe(80);
    expect(b.lastSeq).toBe(80);
    expect(b.all().map((l) => l.seq)).toEqual(range(1, 80).map((l) => l.seq));
  });

  it('inserts late lines in order (gaps are found and filled by the RunFollower in libs)', () => {
    const b = new LogBuffer();
    b.add([...range(1, 3), ...range(7, 9)]);
    expect(b.all().map((l) => l.seq)).toEqual([1, 2, 3, 7, 8, 9]);
    expect(b.add([line(5), line(4), line(6)])).toBe(3);
    expect(b.all().map((l) => l.seq)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9]);
  });

  it('searches plain text, ignoring colour codes and case', () => {
    const b = new LogBuffer();
    b.add([line(1, '\x1b[31mERROR\x1b[0m boom'), line(2, 'fine'), line(3, 'an error again')]);
    expect(b.search('error')).toEqual([0, 2]);
    expect(b.search('')).toEqual([]);
    expect(b.toText()).toBe('ERROR boom\nfine\nan error again\n');
  });

  it('holds 100,000 lines and searches them quickly', () => {
    const b = new LogBuffer();
    for (let start = 1; start <= 100_000; start += 1000) b.add(range(start, start + 999));
    expect(b.length).toBe(100_000);
    const t = performance.now();
    expect(b.search('line 99999')).toEqual([99_998]);
    expect(performance.now() - t).toBeLessThan(1000);
  });

  it('bumps its version only on change', () => {
    const b = new LogBuffer();
    b.add(range(1, 2));
    const v = b.version;
    b.add(range(1, 2));
    expect(b.version).toBe(v);
  });
});

describe('visibleWindow', () => {
  it('renders only the rows in view plus overscan', () => {
    const w = visibleWindow(19 * 5000, 570, 19, 100_000, 20);
    expect(w.first).toBe(4980);
    expect(w.last).toBe(5050);
    expect(w.offset).toBe(4980 * 19);
    expect(w.height).toBe(1_900_000);
  });

  it('clamps at both ends', () => {
    expect(visibleWindow(0, 500, 19, 10)).toMatchObject({ first: 0, last: 10 });
  });
});

describe('LogBuffer rows', () => {
  it('shows a line with newlines (a traceback) as several rows of one seq', () => {
    const b = new LogBuffer();
    b.add([line(1, 'start'), line(2, 'Traceback:\n  File "x.py"\nValueError: bad\n'), line(3, 'end')]);
    expect(b.length).toBe(3);
    expect(b.rowCount).toBe(5);
    expect([0, 1, 2, 3, 4].map((i) => [b.row(i).seq, b.row(i).part])).toEqual([
      [1, 0],
      [2, 0],
      [2, 1],
      [2, 2],
      [3, 0],
    ]);
    expect(b.search('valueerror')).toEqual([3]);
    b.add([line(0 + 4, 'more')]);
    expect(b.rowCount).toBe(6);
  });

  it('rebuilds rows in order after a late line', () => {
    const b = new LogBuffer();
    b.add([line(1), line(3, 'a\nb')]);
    b.add([line(2)]);
    expect([0, 1, 2, 3].map((i) => b.row(i).text)).toEqual(['line 1', 'line 2', 'a', 'b']);
  });
});
