import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseRunBatch, RunBatch, runBatchFastPath } from '../src';
import { sampleEvent } from './fixtures';

const RUN = '0b7c1d3e-1111-4222-8333-444455556666';
const line = (n: number, extra: Record<string, unknown> = {}) => ({
  type: 'log',
  n,
  ts: 1_764_500_000_000 + n,
  stream: 'out',
  text: `line ${n}`,
  ...extra,
});
const sample = sampleEvent();

/** Both paths decide alike: the same success, the same output, the same issues (hence messages). */
function same(raw: unknown) {
  const fast = parseRunBatch(raw);
  const zod = RunBatch.safeParse(raw);
  expect(fast.success).toBe(zod.success);
  if (zod.success) {
    expect(fast.data).toEqual(zod.data);
    // The same keys in the same order (zod's output shape, unknown keys stripped).
    expect(JSON.stringify(fast.data)).toBe(JSON.stringify(zod.data));
  } else expect(fast.error!.issues).toEqual(zod.error.issues);
  return fast;
}

/** A small deterministic generator (the fuzz is reproducible). */
function rng(seed: number) {
  let s = seed >>> 0;
  return () => {
    s = (s * 1664525 + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

describe('parseRunBatch (the fast path of RunBatch.safeParse)', () => {
  it('is on for the schema as it stands (it turns itself off when the schema changes shape)', () => {
    expect(runBatchFastPath).toBe(true);
  });

  it('accepts what the schema accepts, with the same output', () => {
    same({ runId: RUN, seq: 1, entries: [] });
    same({
      runId: RUN,
      seq: 3,
      entries: [line(1), line(2, { stream: 'harness' }), line(3, { stream: 'agent' })],
    });
    same({ runId: RUN.toUpperCase(), seq: 1, entries: [line(1)] });
    // Unknown keys are stripped, at both levels.
    same({ runId: RUN, seq: 1, extra: 1, entries: [line(1, { extra: 'x', seq: 9 })] });
    // Key order of the input does not matter.
    same({ entries: [{ text: 'a', stream: 'out', ts: 1.5, n: 1, type: 'log' }], seq: 1, runId: RUN });
    same({ runId: RUN, seq: 1, entries: [line(1, { text: 'x'.repeat(16_384) })] });
    same({ runId: RUN, seq: 1, entries: [line(1, { text: '\u0000\ud800 é 😀' })] });
    same({
      runId: RUN,
      seq: 1,
      entries: [line(1, { ts: -5 }), line(2, { ts: 0 }), line(3, { n: 2 ** 53 - 1 })],
    });
    same({ runId: RUN, seq: 1, entries: Array.from({ length: 5000 }, (_, i) => line(i + 1)) });
    // Event entries go through zod, beside the log lines.
    same({ runId: RUN, seq: 1, entries: [line(1), { type: 'event', ts: 1, event: sample }, line(2)] });
    same(JSON.parse(JSON.stringify({ runId: RUN, seq: 7, entries: [line(1), line(2)] })));
  });

  it('refuses what the schema refuses, with zod’s own issues', () => {
    const bad: unknown[] = [
      undefined,
      null,
      'batch',
      [],
      { runId: 'nope', seq: 1, entries: [] },
      { runId: RUN, seq: 0, entries: [] },
      { runId: RUN, seq: 1.5, entries: [] },
      { runId: RUN, seq: '1', entries: [] },
      { runId: RUN, seq: 1 },
      { runId: RUN, seq: 1, entries: {} },
      { runId: RUN, seq: 1, entries: Array.from({ length: 5001 }, (_, i) => line(i + 1)) },
      { runId: RUN, seq: 1, entries: [line(1, { text: 'x'.repeat(16_385) })] },
      { runId: RUN, seq: 1, entries: [line(0)] },
      { runId: RUN, seq: 1, entries: [line(-1)] },
      { runId: RUN, seq: 1, entries: [line(1.5)] },
      { runId: RUN, seq: 1, entries: [line(2 ** 53)] },
      { runId: RUN, seq: 1, entries: [line(1, { ts: Infinity })] },
      { runId: RUN, seq: 1, entries: [line(1, { ts: NaN })] },
      { runId: RUN, seq: 1, entries: [line(1, { ts: '1' })] },
      { runId: RUN, seq: 1, entries: [line(1, { stream: 'err' })] },
      { runId: RUN, seq: 1, entries: [line(1, { stream: undefined })] },
      { runId: RUN, seq: 1, entries: [line(1, { text: 5 })] },
      { runId: RUN, seq: 1, entries: [line(1, { type: 'LOG' })] },
      { runId: RUN, seq: 1, entries: [line(1), null] },
      { runId: RUN, seq: 1, entries: [line(1), [1]] },
      { runId: RUN, seq: 1, entries: [{ type: 'event', ts: 1, event: { type: 'sample' } }] },
      { runId: RUN, seq: 1, entries: [line(1), { type: 'event', ts: 1, event: sample }, line(0)] },
      // eslint-disable-next-line no-sparse-arrays
      { runId: RUN, seq: 1, entries: [line(1), , line(3)] },
    ];
    for (const raw of bad) expect(same(raw).success).toBe(false);
  });

  it('agrees with zod on objects JSON never makes', () => {
    class Line {
      type = 'log';
      n = 1;
      ts = 1;
      stream = 'out';
      text = 'x';
    }
    same({ runId: RUN, seq: 1, entries: [new Line()] });
    same({ runId: RUN, seq: 1, entries: [Object.assign(Object.create(null), line(1))] });
    same(Object.assign(Object.create(null), { runId: RUN, seq: 1, entries: [line(1)] }));
    same({ runId: RUN, seq: 1, entries: [new Date()] });
  });

  it('agrees with zod on thousands of randomly broken batches', () => {
    const next = rng(20);
    const pick = <T>(xs: T[]): T => xs[Math.floor(next() * xs.length)];
    const odd: unknown[] = [
      undefined,
      null,
      0,
      -1,
      1.5,
      2 ** 53,
      NaN,
      Infinity,
      -Infinity,
      '',
      '1',
      'out',
      'log',
      'event',
      true,
      [],
      {},
      'x'.repeat(16_385),
      'x'.repeat(16_384),
    ];
    const fields = ['type', 'n', 'ts', 'stream', 'text', 'extra'];
    let refused = 0;
    for (let round = 0; round < 3000; round++) {
      const count = Math.floor(next() * 6);
      const entries: unknown[] = Array.from({ length: count }, (_, i) => line(i + 1));
      // Break a few lines: replace, delete or add a field; or replace the whole entry.
      const breaks = Math.floor(next() * 3);
      for (let b = 0; b < breaks && entries.length; b++) {
        const at = Math.floor(next() * entries.length);
        const r = next();
        if (r < 0.1) entries[at] = pick(odd);
        else if (r < 0.15) entries[at] = { type: 'event', ts: pick([1, NaN]), event: pick([sample, {}]) };
        else {
          const e = { ...(entries[at] as Record<string, unknown>) };
          const f = pick(fields);
          if (r < 0.3) delete e[f];
          else e[f] = pick(odd);
          entries[at] = e;
        }
      }
      const batch: Record<string, unknown> = {
        runId: next() < 0.9 ? RUN : pick(odd),
        seq: next() < 0.9 ? round + 1 : pick(odd),
        entries,
      };
      if (next() < 0.05) delete batch[pick(['runId', 'seq', 'entries'])];
      if (!same(batch).success) refused++;
      // And the same after a JSON round trip, as the gateway receives it.
      const wire = JSON.stringify(batch);
      if (wire !== undefined) same(JSON.parse(wire));
    }
    // The fuzz exercises both outcomes.
    expect(refused).toBeGreaterThan(500);
    expect(refused).toBeLessThan(2900);
  });
  it('agrees with zod on any value in any field of a line (fast-check)', () => {
    // Each field: a valid value, a near miss, or anything at all.
    const field = (valid: fc.Arbitrary<unknown>, nearMiss: fc.Arbitrary<unknown>) =>
      fc.oneof(
        { arbitrary: valid, weight: 6 },
        { arbitrary: nearMiss, weight: 2 },
        { arbitrary: fc.anything(), weight: 1 },
      );
    const logLine = fc.record(
      {
        type: field(fc.constant('log'), fc.constantFrom('LOG', 'event', 'log ', '')),
        n: field(
          fc.integer({ min: 1 }),
          fc.oneof(fc.constantFrom(0, -1, 2 ** 53, 1.5, NaN, Infinity), fc.double()),
        ),
        ts: field(
          fc.double({ noNaN: true, noDefaultInfinity: true }),
          fc.constantFrom(NaN, Infinity, -Infinity, '1', null),
        ),
        stream: field(
          fc.constantFrom('out', 'harness', 'agent'),
          fc.constantFrom('err', 'OUT', 'system', ''),
        ),
        text: field(fc.string({ maxLength: 40 }), fc.oneof(fc.constant('x'.repeat(16_385)), fc.integer())),
        extra: fc.anything(),
      },
      { requiredKeys: [] },
    );
    fc.assert(
      fc.property(
        fc.array(fc.oneof({ arbitrary: logLine, weight: 9 }, { arbitrary: fc.anything(), weight: 1 }), {
          maxLength: 8,
        }),
        field(fc.integer({ min: 1 }), fc.constantFrom(0, 1.5, '1')),
        field(fc.constant(RUN), fc.constantFrom('', RUN.slice(1), `${RUN} `)),
        (entries, seq, runId) => {
          same({ runId, seq, entries });
          same(JSON.parse(JSON.stringify({ runId, seq, entries }) ?? 'null'));
        },
      ),
      { numRuns: 3000 },
    );
  });
});
