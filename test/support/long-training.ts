import { cpSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { parse, stringify } from 'yaml';
import type { MetricView } from '@dryft/libs';
import { RunWatcher } from './agent-helpers';
import { ROOT } from './quickstart';

/**
 * The long-run tier (issue 35, item 2): a `recurrence-cpu` training run held for its whole
 * allowance through the real API, agent and harness. `npm test` runs it scaled (15 s of training);
 * `npm run test:long` sets DRYFT_LONG=1 and takes the allowance from DRYFT_LONG_ALLOWANCE (seconds,
 * default 1800: the hour-long Hard run's half, on a CPU).
 */
export function longAllowanceSeconds(): number {
  if (process.env.DRYFT_LONG !== '1') return 15;
  const seconds = Number(process.env.DRYFT_LONG_ALLOWANCE ?? 1800);
  if (!Number.isFinite(seconds) || seconds < 15)
    throw new Error('DRYFT_LONG_ALLOWANCE: seconds, at least 15');
  return seconds;
}

/** The harness's cadence of loss points for a training budget (harness/training/runner.py). */
export const metricEverySeconds = (allowance: number) => Math.min(1, Math.max(0.05, allowance / 20));

/** The log cap of the long run's benchmark: small, so the run reaches it past its middle. */
export const LONG_LOG_CAP = { maxLines: 400, maxBytes: 1024 * 1024, maxLineBytes: 4096, tailLines: 100 };

/**
 * A copy of config/benchmarks where `recurrence-cpu`'s practice tier trains for `allowance`
 * seconds, its whole-run limit leaves room for start, training and evaluation, and its log cap is
 * {@link LONG_LOG_CAP}. Returns the folder (BENCHMARKS_DIR for the API).
 */
export function longTrainingBenchmarks(allowance: number): { dir: string; runTimeLimitSeconds: number } {
  const dir = mkdtempSync(path.join(tmpdir(), 'dryft-long-benchmarks-'));
  cpSync(path.join(ROOT, 'config/benchmarks'), dir, { recursive: true });
  const file = path.join(dir, 'recurrence-cpu.yaml');
  const def = parse(readFileSync(file, 'utf8'));
  const runTimeLimitSeconds = Math.ceil(allowance * 1.5 + 120);
  def.runTimeLimitSeconds = runTimeLimitSeconds;
  def.logs = LONG_LOG_CAP;
  def.tiers = def.tiers.map((t: Record<string, unknown>) =>
    t.id === 'practice' ? { ...t, trainingSeconds: allowance, evalSeconds: 60 } : t,
  );
  writeFileSync(file, stringify(def));
  return { dir, runTimeLimitSeconds };
}

/**
 * The recurrence-cpu starter, printing `chatter N` (N = 1, 2, …) at a steady rate from its loss
 * function, so that the log's head fills up at about half the allowance and the cap is reached
 * mid-training.
 */
export function chattySubmission(allowance: number): Buffer {
  const source = readFileSync(path.join(ROOT, 'starters/recurrence-cpu/submission.py'), 'utf8');
  const head = LONG_LOG_CAP.maxLines - LONG_LOG_CAP.tailLines - 1;
  const every = (0.5 * allowance) / head;
  const chatter = `
import time as _chatter_time
_chatter = {"start": None, "n": 0}


def _chatty_loss(batch):
    # Lines by the clock, not by the step: a slow step prints the lines it owes at once.
    now = _chatter_time.monotonic()
    if _chatter["start"] is None:
        _chatter["start"] = now
    while _chatter["n"] < (now - _chatter["start"]) / ${every.toFixed(4)}:
        _chatter["n"] += 1
        print(f"chatter {_chatter['n']}", flush=True)
    return token_training_loss(batch)


SUBMISSION = Submission(`;
  const out = source
    .replace('\nSUBMISSION = Submission(', chatter)
    .replace('token_training_loss=token_training_loss,', 'token_training_loss=_chatty_loss,');
  if (!out.includes('_chatty_loss,')) throw new Error('the recurrence-cpu starter changed shape');
  return Buffer.from(out);
}

/** A `/live` watcher that records the loss points it receives too. */
export class CurveWatcher extends RunWatcher {
  readonly points: MetricView[] = [];

  constructor(url: string, auth: { cookie?: string; token?: string }) {
    super(url, auth);
    this.socket.on('run.metric', (e: { metric: MetricView }) => this.points.push(e.metric));
  }

  /** Seconds of training behind the last point received (0 before the first). */
  get trainedSeconds(): number {
    return this.points.length ? this.points[this.points.length - 1].elapsedMs / 1000 : 0;
  }

  /** Drops the connection under the watcher (as a network cut would); it reconnects and rejoins. */
  cut(): void {
    this.socket.io.engine.close();
  }
}

export interface CurveFigures {
  points: number;
  /** Largest time between two consecutive points, seconds. */
  maxGapSeconds: number;
  /** Places where a point is missing: more than 1.75 × the cadence between two points. */
  gaps: { afterStep: number; seconds: number }[];
  /** Points out of order or repeated (steps not strictly increasing). */
  repeats: number;
}

/**
 * The stored loss curve, judged: the harness sends a point every `metricEvery` seconds (a child's
 * point can be up to one training step later), so two consecutive points further apart than 1.75 ×
 * the cadence mean one was lost on the way (lost points leave 2 × or more).
 */
export function judgeCurve(curve: MetricView[], metricEvery: number): CurveFigures {
  const gaps: CurveFigures['gaps'] = [];
  let repeats = 0;
  let maxGap = 0;
  for (let i = 1; i < curve.length; i++) {
    const seconds = (curve[i].elapsedMs - curve[i - 1].elapsedMs) / 1000;
    maxGap = Math.max(maxGap, seconds);
    if (curve[i].step <= curve[i - 1].step) repeats++;
    if (seconds > 1.75 * metricEvery) gaps.push({ afterStep: curve[i - 1].step, seconds });
  }
  return { points: curve.length, maxGapSeconds: Number(maxGap.toFixed(3)), gaps, repeats };
}
