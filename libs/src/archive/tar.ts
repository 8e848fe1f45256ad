/**
 * A small, strict ustar/pax reader and a deterministic writer, in plain TypeScript so the API, the
 * CLI and the browser read archives with one implementation. The reader never touches a file
 * system: it returns entries with their bytes, and the caller decides what to do with them.
 */
export type TarEntryType = 'file' | 'directory' | 'symlink' | 'hardlink' | 'device' | 'fifo' | 'other';

export interface TarEntry {
  name: string;
  type: TarEntryType;
  size: number;
  content: Uint8Array;
}

export class TarFormatError extends Error {}

const BLOCK = 512;
const decoder = new TextDecoder('utf-8', { fatal: false });

function field(block: Uint8Array, offset: number, length: number): Uint8Array {
  const slice = block.subarray(offset, offset + length);
  const nul = slice.indexOf(0);
  return nul === -1 ? slice : slice.subarray(0, nul);
}

function text(block: Uint8Array, offset: number, length: number): string {
  return decoder.decode(field(block, offset, length));
}

function octal(block: Uint8Array, offset: number, length: number): number {
  const raw = text(block, offset, length).trim();
  if (raw === '') return 0;
  if (!/^[0-7]+$/.test(raw)) throw new TarFormatError(`bad number field "${raw}" in a tar header`);
  return parseInt(raw, 8);
}

function typeOf(flag: string): TarEntryType {
  switch (flag) {
    case '0':
    case '\0':
    case '':
    case '7':
      return 'file';
    case '5':
      return 'directory';
    case '2':
      return 'symlink';
    case '1':
      return 'hardlink';
    case '3':
    case '4':
      return 'device';
    case '6':
      return 'fifo';
    default:
      return 'other';
  }
}

/**
 * PAX records are `<length> <key>=<value>\n`, where length counts BYTES (UTF-8): the records are
 * cut from the bytes, and each is decoded on its own, so a non-ASCII name does not shift the next.
 */
function parsePax(data: Uint8Array): Record<string, string> {
  const out: Record<string, string> = {};
  let pos = 0;
  while (pos < data.length) {
    if (data[pos] === 0) break; // padding
    const space = data.indexOf(0x20, pos);
    if (space === -1) throw new TarFormatError('bad pax header record');
    const digits = decoder.decode(data.subarray(pos, space));
    const len = /^[0-9]+$/.test(digits) ? parseInt(digits, 10) : NaN;
    if (
      !Number.isFinite(len) ||
      len <= space - pos + 1 ||
      pos + len > data.length ||
      data[pos + len - 1] !== 0x0a
    )
      throw new TarFormatError('bad pax header record');
    const record = strictUtf8(data.subarray(space + 1, pos + len - 1));
    const eq = record.indexOf('=');
    if (eq > 0) out[record.slice(0, eq)] = record.slice(eq + 1);
    pos += len;
  }
  return out;
}

const strictDecoder = new TextDecoder('utf-8', { fatal: true });
function strictUtf8(bytes: Uint8Array): string {
  try {
    return strictDecoder.decode(bytes);
  } catch {
    throw new TarFormatError('a pax header record is not UTF-8');
  }
}

/**
 * Reads every entry of an uncompressed tar. Throws TarFormatError on a truncated or corrupt stream.
 * `onEntry` may throw to stop early (the caller's limits).
 */
export function readTar(data: Uint8Array, onEntry: (entry: TarEntry) => void): void {
  let offset = 0;
  let paxName: string | undefined;
  let longName: string | undefined;
  let sawEnd = false;
  while (offset + BLOCK <= data.length) {
    const header = data.subarray(offset, offset + BLOCK);
    if (header.every((b) => b === 0)) {
      sawEnd = true;
      break;
    }
    let sum = 0;
    for (let i = 0; i < BLOCK; i++) sum += i >= 148 && i < 156 ? 32 : header[i];
    if (sum !== octal(header, 148, 8))
      throw new TarFormatError('tar header checksum mismatch (corrupt archive)');
    const size = octal(header, 124, 12);
    const flag = String.fromCharCode(header[156]);
    const start = offset + BLOCK;
    const end = start + size;
    if (end > data.length) throw new TarFormatError('archive is truncated inside an entry');
    const content = data.subarray(start, end);
    offset = start + Math.ceil(size / BLOCK) * BLOCK;
    if (flag === 'x') {
      paxName = parsePax(content).path ?? paxName;
      continue;
    }
    if (flag === 'g') continue;
    if (flag === 'L') {
      longName = text(content, 0, content.length);
      continue;
    }
    const magic = text(header, 257, 6);
    const prefix = magic.startsWith('ustar') ? text(header, 345, 155) : '';
    const rawName = text(header, 0, 100);
    const name = paxName ?? longName ?? (prefix ? `${prefix}/${rawName}` : rawName);
    paxName = undefined;
    longName = undefined;
    onEntry({ name, type: typeOf(flag), size, content });
  }
  if (!sawEnd) throw new TarFormatError('archive is truncated (no end-of-archive marker)');
}

function writeString(block: Uint8Array, offset: number, length: number, value: string): void {
  const bytes = new TextEncoder().encode(value);
  if (bytes.length > length) throw new TarFormatError(`"${value}" is too long for a tar header field`);
  block.set(bytes, offset);
}

function writeOctal(block: Uint8Array, offset: number, length: number, value: number): void {
  writeString(block, offset, length, value.toString(8).padStart(length - 1, '0'));
}

export interface TarInput {
  name: string;
  content: Uint8Array;
  /** Default 0644 for files, 0755 for folders. */
  mode?: number;
  type?: 'file' | 'directory';
}

/**
 * Writes a deterministic ustar archive: entries sorted by name, mtime 0, uid/gid 0, no user names,
 * so the same files always give the same bytes. Names over 100 bytes travel in pax headers.
 */
export function writeTar(files: TarInput[]): Uint8Array {
  const sorted = [...files].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  const parts: Uint8Array[] = [];
  for (const file of sorted) {
    const isDir = file.type === 'directory';
    const name = isDir && !file.name.endsWith('/') ? `${file.name}/` : file.name;
    const header = new Uint8Array(BLOCK);
    const nameBytes = new TextEncoder().encode(name);
    if (nameBytes.length > 100) {
      const pax = paxRecord('path', name);
      parts.push(headerFor('././@PaxHeader', pax.length, 'x'), padded(pax));
      writeString(header, 0, 100, name.slice(0, 99).replace(/[^\x20-\x7e]/g, '_'));
    } else {
      writeString(header, 0, 100, name);
    }
    const size = isDir ? 0 : file.content.length;
    fillHeader(header, size, isDir ? '5' : '0', file.mode ?? (isDir ? 0o755 : 0o644));
    parts.push(header);
    if (size) parts.push(padded(file.content));
  }
  parts.push(new Uint8Array(BLOCK * 2));
  const total = parts.reduce((n, p) => n + p.length, 0);
  const out = new Uint8Array(total);
  let pos = 0;
  for (const p of parts) {
    out.set(p, pos);
    pos += p.length;
  }
  return out;
}

function paxRecord(key: string, value: string): Uint8Array {
  const body = ` ${key}=${value}\n`;
  let len = new TextEncoder().encode(body).length;
  len += String(len).length;
  if (String(len).length !== String(len - String(len).length).length) len += 1;
  return new TextEncoder().encode(`${len}${body}`);
}

function headerFor(name: string, size: number, flag: string): Uint8Array {
  const header = new Uint8Array(BLOCK);
  writeString(header, 0, 100, name);
  fillHeader(header, size, flag);
  return header;
}

function fillHeader(header: Uint8Array, size: number, flag: string, mode = 0o644): void {
  writeOctal(header, 100, 8, mode);
  writeOctal(header, 108, 8, 0);
  writeOctal(header, 116, 8, 0);
  writeOctal(header, 124, 12, size);
  writeOctal(header, 136, 12, 0);
  header[156] = flag.charCodeAt(0);
  writeString(header, 257, 6, 'ustar');
  writeString(header, 263, 2, '00');
  for (let i = 148; i < 156; i++) header[i] = 32;
  let sum = 0;
  for (let i = 0; i < BLOCK; i++) sum += header[i];
  writeString(header, 148, 8, sum.toString(8).padStart(6, '0') + '\0 ');
}

function padded(content: Uint8Array): Uint8Array {
  const size = Math.ceil(content.length / BLOCK) * BLOCK;
  if (size === content.length) return content;
  const out = new Uint8Array(size);
  out.set(content);
  return out;
}
