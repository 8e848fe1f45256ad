import { badRequest } from './errors';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Opaque pagination cursors: base64url of "<iso date>|<uuid>". */
export function encodeCursor(createdAt: Date, id: string): string {
  return Buffer.from(`${createdAt.toISOString()}|${id}`).toString('base64url');
}

export function decodeCursor(cursor: string | undefined): { createdAt: Date; id: string } | undefined {
  if (!cursor) return undefined;
  const [iso, id] = Buffer.from(cursor, 'base64url').toString('utf8').split('|');
  const createdAt = new Date(iso);
  if (!id || !UUID.test(id) || Number.isNaN(createdAt.getTime()))
    throw badRequest('invalid_cursor', 'The cursor is not one this API returned; start from the first page.');
  return { createdAt, id };
}

export function parseLimit(raw: string | undefined, fallback = 20, max = 100): number {
  if (raw === undefined) return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1 || n > max)
    throw badRequest('invalid_limit', `limit must be an integer from 1 to ${max}.`);
  return n;
}
