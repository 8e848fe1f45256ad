import { z } from 'zod';

/** What a text field with a NUL character is told (Postgres can store no NUL in text). */
export const NUL_MESSAGE = 'must not contain a NUL character (\\u0000); remove it and send it again';

/**
 * Text the hub stores (names, reasons, announcements): a NUL character is refused at the edge,
 * naming the field, instead of failing in Postgres ("invalid byte sequence for encoding UTF8: 0x00").
 * The one refinement every stored text field of the REST bodies uses.
 */
export function storedText<T extends z.ZodString>(schema: T): T {
  return schema.refine((s) => !s.includes('\u0000'), NUL_MESSAGE);
}
