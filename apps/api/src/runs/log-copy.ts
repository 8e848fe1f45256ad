import type { LogLine } from '@dryft/libs';

/** Postgres text cannot hold NUL; a submission printing one must not lose the whole batch. */
export const stripNul = (text: string): string =>
  text.includes('\u0000') ? text.split('\u0000').join('') : text;

const INT4_MAX = 2 ** 31 - 1;

/**
 * True when COPY can store these lines with no line stored twice and no value Postgres would
 * refuse: seqs past `lastSeq` (the highest stored for the run) and increasing, each an int4, each
 * timestamp an integer once rounded that fits an int8 exactly.
 */
export function allNew(lines: LogLine[], lastSeq: number): boolean {
  let prev = lastSeq;
  for (const l of lines) {
    if (!(l.seq > prev && l.seq <= INT4_MAX && Number.isSafeInteger(Math.round(l.ts)))) return false;
    prev = l.seq;
  }
  return true;
}

const SIGNATURE = Buffer.from('PGCOPY\n\xff\r\n\0', 'latin1');
const STREAMS = new Map<string, Buffer>();

/**
 * A run's lines as the body of `COPY run_logs (run_id, seq, ts, stream, text) FROM STDIN (FORMAT
 * binary)`: one buffer, nothing for Postgres to parse but the tuples (no array literals, no escapes).
 * Per tuple: the field count, then each field's length and bytes (uuid as 16 bytes, int4, int8,
 * UTF-8 text). Text is stripped of NUL, which Postgres text cannot hold. Check {@link allNew} first.
 */
export function binaryLogCopy(runId: string, lines: LogLine[]): Buffer {
  const id = Buffer.from(runId.replace(/-/g, ''), 'hex');
  if (id.length !== 16) throw new Error(`not a uuid: ${runId}`);
  // A tuple's fixed part: the field count (2), then uuid (4 + 16), int4 (4 + 4), int8 (4 + 8) and
  // the two text lengths (4 + 4).
  const FIXED = 2 + 20 + 8 + 12 + 8;
  // This runs for every stored line (a large share of the hub's CPU per line): one buffer sized
  // exactly, then plain integer writes. No BigInt per timestamp (high and low words instead), no
  // native copy for the 16 uuid bytes or the stream name, one native call per text.
  const texts = new Array<string>(lines.length);
  let size = SIGNATURE.length + 8 + 2;
  for (let i = 0; i < lines.length; i++) {
    const text = stripNul(lines[i].text);
    texts[i] = text;
    size += FIXED + streamBytes(lines[i].stream).length + Buffer.byteLength(text);
  }
  const buf = Buffer.allocUnsafe(size);
  let at = SIGNATURE.copy(buf, 0);
  at = buf.writeInt32BE(0, at); // flags
  at = buf.writeInt32BE(0, at); // header extension length
  for (let i = 0; i < lines.length; i++) {
    const l = lines[i];
    at = buf.writeInt16BE(5, at);
    at = buf.writeInt32BE(16, at);
    for (let k = 0; k < 16; k++) buf[at + k] = id[k];
    at += 16;
    at = buf.writeInt32BE(4, at);
    at = buf.writeInt32BE(l.seq, at);
    at = buf.writeInt32BE(8, at);
    // The int8 as two words: exact, since allNew checked that the rounded ts is a safe integer.
    const ts = Math.round(l.ts);
    const high = Math.floor(ts / 2 ** 32);
    at = buf.writeInt32BE(high, at);
    at = buf.writeUInt32BE(ts - high * 2 ** 32, at);
    const s = streamBytes(l.stream);
    at = buf.writeInt32BE(s.length, at);
    for (let k = 0; k < s.length; k++) buf[at + k] = s[k];
    at += s.length;
    const n = buf.write(texts[i], at + 4);
    buf.writeInt32BE(n, at);
    at += 4 + n;
  }
  at = buf.writeInt16BE(-1, at); // trailer
  if (at !== size) throw new Error(`binary COPY body is ${at} bytes, expected ${size}`);
  return buf;
}

function streamBytes(stream: string): Buffer {
  let b = STREAMS.get(stream);
  if (!b) {
    b = Buffer.from(stream, 'utf8');
    if (STREAMS.size < 16) STREAMS.set(stream, b);
  }
  return b;
}
