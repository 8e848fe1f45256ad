import { performance } from 'node:perf_hooks';

/**
 * Where a leaderboard broadcast's or a log batch's time goes inside the API, for the bench only
 * (DRYFT_LATENCY_TRACE=1; off, every call is a check of one boolean). Each trace is a list of
 * (stage, wall-clock ms) marks; a finished trace is printed to stderr as one JSON line, which
 * `node bench/run.mjs` with BENCH_TRACE=1 reads back and sums up per stage.
 */
export const LATENCY_TRACE = process.env.DRYFT_LATENCY_TRACE === '1';

/** Wall-clock ms with sub-ms precision: comparable with Date.now() in another process. */
export const traceNow = (): number => performance.timeOrigin + performance.now();

type Marks = [string, number][];
const open = new Map<string, Marks>();

export function traceMark(key: string, stage: string, at = traceNow()): void {
  if (!LATENCY_TRACE) return;
  let marks = open.get(key);
  if (!marks) {
    // Never grows without bound: a trace nobody ends is dropped with the oldest.
    if (open.size > 10_000) open.delete(open.keys().next().value as string);
    marks = [];
    open.set(key, marks);
  }
  marks.push([stage, at]);
}

export function traceEnd(key: string, stage: string, extra: Record<string, unknown> = {}): void {
  if (!LATENCY_TRACE) return;
  const marks = open.get(key);
  if (!marks) return;
  open.delete(key);
  marks.push([stage, traceNow()]);
  process.stderr.write(`DRYFT_TRACE ${JSON.stringify({ key, marks, ...extra })}\n`);
}

/** Carries a trace over to another key (a run's verdict becomes its board's broadcast). */
export function traceRename(from: string, to: string): void {
  if (!LATENCY_TRACE) return;
  const marks = open.get(from);
  if (!marks) return;
  open.delete(from);
  open.set(to, marks);
}

/** A mark on a trace already open (a step deep in a shared path: a build nobody traces adds nothing). */
export function traceStep(key: string, stage: string): void {
  if (!LATENCY_TRACE) return;
  open.get(key)?.push([stage, traceNow()]);
}
