import { createHash, randomBytes } from 'node:crypto';

/**
 * Secret tokens: a fixed prefix, 32 random base62 characters and a 6-character checksum, so a
 * mistyped or truncated token is refused without a database query, and a leaked one is easy to
 * recognise by its prefix (secret scanners, the starter's credential test). Only a hash is stored.
 */
export const TOKEN_PREFIXES = { pat: 'dryft_pat_', agent: 'dryft_agent_' } as const;
export type TokenKind = keyof typeof TOKEN_PREFIXES;

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
const BODY_LENGTH = 32;
const CHECKSUM_LENGTH = 6;

function toBase62(bytes: Buffer, length: number): string {
  let out = '';
  for (const byte of bytes) {
    if (out.length === length) break;
    // 248 = 4 × 62: rejecting higher bytes keeps the alphabet uniform.
    if (byte < 248) out += BASE62[byte % 62];
  }
  return out;
}

function checksum(prefix: string, body: string): string {
  const digest = createHash('sha256')
    .update(prefix + body)
    .digest();
  let n = digest.readUInt32BE(0) * 65536 + digest.readUInt16BE(4);
  let out = '';
  for (let i = 0; i < CHECKSUM_LENGTH; i++) {
    out = BASE62[n % 62] + out;
    n = Math.floor(n / 62);
  }
  return out;
}

/** The characters of a token's body that name the hub that made it (see {@link generateToken}). */
export const HUB_TAG_LENGTH = 4;

/**
 * A new token. With `hubTag` (4 base62 characters, the hub's own), the body starts with it: the
 * part token lists show (`tokenDisplayPrefix`), and how a hub tells a token made by another hub
 * from one it does not know.
 */
export function generateToken(kind: TokenKind, hubTag?: string): string {
  const prefix = TOKEN_PREFIXES[kind];
  if (hubTag !== undefined && !new RegExp(`^[0-9A-Za-z]{${HUB_TAG_LENGTH}}$`).test(hubTag))
    throw new Error(`a hub tag is ${HUB_TAG_LENGTH} base62 characters (got ${JSON.stringify(hubTag)})`);
  let body = hubTag ?? '';
  while (body.length < BODY_LENGTH) body += toBase62(randomBytes(48), BODY_LENGTH - body.length);
  return prefix + body + checksum(prefix, body);
}

export type TokenCheck =
  { ok: true; kind: TokenKind } | { ok: false; reason: 'malformed' | 'bad_checksum'; message: string };

/** Offline check of a token's shape and checksum; the CLI and the API both use it. */
export function checkTokenFormat(token: string, expected?: TokenKind): TokenCheck {
  const kinds = expected ? [expected] : (Object.keys(TOKEN_PREFIXES) as TokenKind[]);
  for (const kind of kinds) {
    const prefix = TOKEN_PREFIXES[kind];
    if (!token.startsWith(prefix)) continue;
    const rest = token.slice(prefix.length);
    if (rest.length !== BODY_LENGTH + CHECKSUM_LENGTH || !/^[0-9A-Za-z]+$/.test(rest)) {
      return {
        ok: false,
        reason: 'malformed',
        message: `This ${prefix}… token is incomplete or has extra characters; copy the whole value again.`,
      };
    }
    const body = rest.slice(0, BODY_LENGTH);
    if (checksum(prefix, body) !== rest.slice(BODY_LENGTH)) {
      return {
        ok: false,
        reason: 'bad_checksum',
        message: 'This token fails its checksum: a character was changed or mistyped; copy it again.',
      };
    }
    return { ok: true, kind };
  }
  const want = kinds.map((k) => TOKEN_PREFIXES[k]).join(' or ');
  return { ok: false, reason: 'malformed', message: `A token starts with ${want}; this value does not.` };
}

/** The hub tag a well-formed token carries (the first characters of its body). */
export function tokenHubTag(token: string): string | null {
  const kind = (Object.keys(TOKEN_PREFIXES) as TokenKind[]).find((k) => token.startsWith(TOKEN_PREFIXES[k]));
  return kind ? token.slice(TOKEN_PREFIXES[kind].length, TOKEN_PREFIXES[kind].length + HUB_TAG_LENGTH) : null;
}

/** The part of a token that lists may show: prefix plus the first four characters of the body. */
export function tokenDisplayPrefix(token: string): string {
  const kind = (Object.keys(TOKEN_PREFIXES) as TokenKind[]).find((k) => token.startsWith(TOKEN_PREFIXES[k]));
  const prefix = kind ? TOKEN_PREFIXES[kind] : '';
  return token.slice(0, prefix.length + 4);
}

export function hashToken(token: string): string {
  return createHash('sha256').update(token).digest('hex');
}
