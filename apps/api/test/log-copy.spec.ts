import { describe, expect, it } from 'vitest';
import type { LogLine } from '@dryft/libs';
import { allNew, binaryLogCopy, stripNul } from '../src/runs/log-copy';

const RUN = '0b7c1d3e-1111-4222-8333-444455556666';

/**
 * The encoder as it was before it was made quicker (a BigInt per timestamp, a native copy per
 * uuid and stream), verbatim: the reference the current one must match byte for byte.
 */
const REFERENCE_SIGNATURE = Buffer.from('PGCOPY\n\xff\r\n\0', 'latin1');
const REFERENCE_STREAMS = new Map<string, Buffer>();
function referenceCopy(runId: string, lines: LogLine[]): Buffer {
  const id = Buffer.from(runId.replace(/-/g, ''), 'hex');
  if (id.length !== 16) throw new Error(`not a uuid: ${runId}`);
  // A tuple's fixed part: the field count (2), then uuid (4 + 16), int4 (4 + 4), int8 (4 + 8) and
  // the two text lengths (4 + 4).
  const FIXED = 2 + 20 + 8 + 12 + 8;
  const texts = lines.map((l) => stripNul(l.text));
  let size = REFERENCE_SIGNATURE.length + 8 + 2;
  for (let i = 0; i < lines.length; i++)
    size += FIXED + referenceStreamBytes(lines[i].stream).length + Buffer.byteLength(texts[i]);
  const buf = Buffer.allocUnsafe(size);
  let at = REFERENCE_SIGNATURE.copy(buf, 0);
  at = buf.writeInt32BE(0, at); // flags
  at = buf.writeInt32BE(0, at); // header extension length
  lines.forEach((l, i) => {
    at = buf.writeInt16BE(5, at);
    at = buf.writeInt32BE(16, at);
    at += id.copy(buf, at);
    at = buf.writeInt32BE(4, at);
    at = buf.writeInt32BE(l.seq, at);
    at = buf.writeInt32BE(8, at);
    at = buf.writeBigInt64BE(BigInt(Math.round(l.ts)), at);
    const s = referenceStreamBytes(l.stream);
    at = buf.writeInt32BE(s.length, at);
    at += s.copy(buf, at);
    const n = buf.write(texts[i], at + 4, 'utf8');
    buf.writeInt32BE(n, at);
    at += 4 + n;
  });
  at = buf.writeInt16BE(-1, at); // trailer
  if (at !== size) throw new Error(`binary COPY body is ${at} bytes, expected ${size}`);
  return buf;
}

function referenceStreamBytes(stream: string): Buffer {
  let b = REFERENCE_STREAMS.get(stream);
  if (!b) {
    b = Buffer.from(stream, 'utf8');
    if (REFERENCE_STREAMS.size < 16) REFERENCE_STREAMS.set(stream, b);
  }
  return b;
}

function rng(seed: number) {
  let s = seed >>> 0;
  return () => {
    s = (s * 1664525 + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

describe('binaryLogCopy (the COPY body of stored lines)', () => {
  it('is byte for byte the reference encoding, on random lines (NUL, lone surrogates, any timestamp)', () => {
    const next = rng(7);
    const chars = ['a', 'é', '€', '😀', '\u0000', '\ud800', '\udc00', '\n', '"', '\\', 'x'];
    const streams: LogLine['stream'][] = ['out', 'harness', 'agent', 'system'];
    const timestamps = [
      0,
      1,
      -1,
      1.5,
      2.5,
      -2.5,
      2 ** 32,
      2 ** 32 - 1,
      -(2 ** 32),
      2 ** 53 - 1,
      -(2 ** 53 - 1),
    ];
    for (let round = 0; round < 300; round++) {
      let seq = Math.floor(next() * 1000);
      const lines: LogLine[] = Array.from({ length: Math.floor(next() * 20) }, () => {
        const len = Math.floor(next() * 30);
        let text = '';
        for (let i = 0; i < len; i++) text += chars[Math.floor(next() * chars.length)];
        seq += 1 + Math.floor(next() * 3);
        const ts =
          next() < 0.5
            ? timestamps[Math.floor(next() * timestamps.length)]
            : 1_764_500_000_000 + Math.floor(next() * 1e6) + (next() < 0.2 ? 0.5 : 0);
        return { seq, ts, stream: streams[Math.floor(next() * streams.length)], text };
      });
      expect(allNew(lines, 0)).toBe(true);
      expect(binaryLogCopy(RUN, lines).equals(referenceCopy(RUN, lines))).toBe(true);
    }
  });

  it('encodes a 5,000-line batch as the reference does', () => {
    const lines: LogLine[] = Array.from({ length: 5000 }, (_, i) => ({
      seq: i + 1,
      ts: 1_764_500_000_000 + i,
      stream: 'out',
      text: `line ${i} ${'y'.repeat(i % 97)}`,
    }));
    expect(binaryLogCopy(RUN, lines).equals(referenceCopy(RUN, lines))).toBe(true);
  });
});
