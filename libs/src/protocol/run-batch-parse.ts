import type { z } from 'zod';
import { AgentRunId, BatchEntry, RunBatch } from './agents';

/**
 * `RunBatch.safeParse`, quicker on the common batch: thousands of plain log lines. zod walks each
 * line through a discriminated union, an object schema and four field schemas (about 1 µs a line,
 * a fifth of the hub's CPU per stored line); the loop below checks a log line's five fields
 * directly and builds the same output object zod would (known keys only, in the schema's order).
 *
 * The schema stays the one definition. The fast path only ever says "valid": anything it is not
 * sure of (a value out of range, an odd object, an event entry zod refuses) sends the whole payload
 * to `RunBatch.safeParse`, so refusals and their messages are zod's own. Its limits are read from
 * the schema, and it turns itself off (everything goes to zod) when the schema is no longer the
 * shape it was written for; test/run-batch-parse.spec.ts checks both, and fuzzes the two paths
 * against each other.
 */
export function parseRunBatch(raw: unknown): z.ZodSafeParseResult<RunBatch> {
  const data = FAST ? fastRunBatch(raw, FAST) : null;
  return data ? { success: true, data } : RunBatch.safeParse(raw);
}

interface Limits {
  maxEntries: number;
  maxText: number;
  streams: readonly string[];
}

const LOG = BatchEntry.options[0];

/** The limits of the schema, when it is still the one the fast path was written for; else null. */
function limitsOfSchema(): Limits | null {
  const checks = (s: z.ZodType) =>
    (s._zod.def as { checks?: { _zod: { def: Record<string, unknown> } }[] }).checks?.map(
      (c) => c._zod.def,
    ) ?? [];
  const positiveInt = (s: z.ZodType) => {
    const c = checks(s);
    return (
      s._zod.def.type === 'number' &&
      c.length === 2 &&
      c[0].check === 'number_format' &&
      c[0].format === 'safeint' &&
      c[1].check === 'greater_than' &&
      c[1].value === 0 &&
      c[1].inclusive === false
    );
  };
  const same = (a: readonly string[], b: readonly string[]) =>
    a.length === b.length && a.every((x, i) => x === b[i]);
  const entries = RunBatch.shape.entries;
  const max = checks(entries);
  const text = LOG.shape.text;
  if (
    !same(Object.keys(RunBatch.shape), ['runId', 'seq', 'entries']) ||
    RunBatch._zod.def.catchall !== undefined ||
    RunBatch.shape.runId !== AgentRunId ||
    !positiveInt(RunBatch.shape.seq) ||
    entries.element !== BatchEntry ||
    max.length !== 1 ||
    max[0].check !== 'max_length' ||
    typeof max[0].maximum !== 'number' ||
    BatchEntry.options.length !== 2 ||
    BatchEntry._zod.def.discriminator !== 'type' ||
    !same(Object.keys(LOG.shape), ['type', 'n', 'ts', 'stream', 'text']) ||
    LOG._zod.def.catchall !== undefined ||
    !same(LOG.shape.type.values ? [...LOG.shape.type.values] : [], ['log']) ||
    !positiveInt(LOG.shape.n) ||
    LOG.shape.ts._zod.def.type !== 'number' ||
    checks(LOG.shape.ts).length !== 0 ||
    LOG.shape.stream._zod.def.type !== 'enum' ||
    text._zod.def.type !== 'string' ||
    checks(text).length !== 1 ||
    typeof text.maxLength !== 'number' ||
    text.minLength !== null
  )
    return null;
  return { maxEntries: max[0].maximum, maxText: text.maxLength, streams: [...LOG.shape.stream.options] };
}

/** Null when the fast path is off: the schema changed shape (see {@link limitsOfSchema}). */
const FAST = limitsOfSchema();

/** Whether batches take the fast path (false: the schema changed and everything goes to zod). */
export const runBatchFastPath = FAST !== null;

/** What JSON.parse makes: the only objects the fast path takes (zod treats others its own way). */
const plain = (x: unknown): x is Record<string, unknown> =>
  typeof x === 'object' && x !== null && Object.getPrototypeOf(x) === Object.prototype;

const positiveInt = (x: unknown): x is number => typeof x === 'number' && Number.isSafeInteger(x) && x > 0;

/** The batch as zod would output it, or null when the fast path is not sure (zod decides). */
function fastRunBatch(raw: unknown, l: Limits): RunBatch | null {
  if (!plain(raw)) return null;
  const { runId, seq, entries } = raw;
  if (typeof runId !== 'string' || !positiveInt(seq) || !Array.isArray(entries)) return null;
  if (entries.length > l.maxEntries || !AgentRunId.safeParse(runId).success) return null;
  const out: BatchEntry[] = new Array(entries.length);
  for (let i = 0; i < entries.length; i++) {
    const e: unknown = entries[i];
    if (!plain(e)) return null;
    if (e.type === 'log') {
      const { n, ts, stream, text } = e;
      if (!positiveInt(n) || typeof ts !== 'number' || !Number.isFinite(ts)) return null;
      if (typeof text !== 'string' || text.length > l.maxText) return null;
      if (typeof stream !== 'string' || !l.streams.includes(stream)) return null;
      out[i] = { type: 'log', n, ts, stream: stream as 'out', text };
    } else {
      const parsed = BatchEntry.safeParse(e);
      if (!parsed.success) return null;
      out[i] = parsed.data;
    }
  }
  return { runId, seq, entries: out };
}
