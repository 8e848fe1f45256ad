import type { HarnessSpec, RunMode } from '@dryft/libs';
import type { EffectiveBenchmark } from '../benchmarks/benchmarks.service';
import { badRequest } from '../common/errors';

export interface RunChoice {
  mode: RunMode;
  tier: string | null;
  dataset: string | null;
  /** Daily-limit bucket: the tier for tiered benchmarks, else the mode. */
  quotaBucket: string;
  dailyLimit: number | null;
  spec: HarnessSpec;
}

/**
 * Checks mode, tier and dataset against the benchmark and derives the harness spec. Each refusal
 * says what the benchmark accepts. Hidden workloads and seeds go into the spec (which only the
 * agent's trusted harness reads), never into anything a participant receives.
 */
export function chooseRun(
  b: EffectiveBenchmark,
  input: { mode: RunMode; tier?: string; dataset?: string; confirm?: boolean },
): RunChoice {
  if (input.mode === 'official' && input.confirm !== true) {
    throw badRequest(
      'confirmation_required',
      'Official runs count toward the leaderboard: send "confirm": true to start one.',
    );
  }
  if (b.kind === 'decode') {
    if (input.tier || input.dataset) {
      throw badRequest(
        'no_tiers',
        `${b.id} has no tiers or datasets; send only "mode" (public or official).`,
      );
    }
    return {
      mode: input.mode,
      tier: null,
      dataset: null,
      quotaBucket: input.mode,
      dailyLimit: b.dailyLimits[input.mode] ?? null,
      spec: decodeSpec(b, input.mode),
    };
  }
  const tierIds = b.tiers.map((t) => t.id).join(', ');
  if (!input.tier) throw badRequest('tier_required', `${b.id} needs a tier: one of ${tierIds}.`);
  const tier = b.tiers.find((t) => t.id === input.tier);
  if (!tier) throw badRequest('unknown_tier', `Unknown tier "${input.tier}"; ${b.id} has ${tierIds}.`);
  let task;
  if (tier.ranked) {
    if (input.dataset)
      throw badRequest(
        'dataset_not_allowed',
        `The ${tier.title} tier uses its hidden evaluation; send no dataset.`,
      );
    if (input.mode !== 'official')
      throw badRequest(
        'ranked_tier_is_official',
        `The ${tier.title} tier is ranked: start it with mode "official".`,
      );
    task = tier.hiddenTask!;
  } else {
    const datasets = b.datasets.filter((d) => d.tiers.includes(tier.id));
    const names = datasets.map((d) => d.id).join(', ');
    if (!input.dataset)
      throw badRequest(
        'dataset_required',
        `The ${tier.title} tier needs a practice dataset: one of ${names}.`,
      );
    const dataset = datasets.find((d) => d.id === input.dataset);
    if (!dataset)
      throw badRequest(
        'unknown_dataset',
        `Unknown dataset "${input.dataset}" for ${tier.title}; choose one of ${names}.`,
      );
    if (input.mode !== 'public')
      throw badRequest(
        'practice_tier_is_public',
        `The ${tier.title} tier is practice: start it with mode "public"; only ranked tiers are official.`,
      );
    task = dataset.task;
  }
  return {
    mode: input.mode,
    tier: tier.id,
    dataset: input.dataset ?? null,
    quotaBucket: tier.id,
    dailyLimit: tier.dailyLimit,
    spec: {
      kind: 'training',
      benchmark: b.id,
      mode: input.mode,
      rulesVersion: b.rulesVersion,
      tier: tier.id,
      dataset: input.dataset ?? null,
      trainingSeconds: tier.trainingSeconds,
      evalSeconds: tier.evalSeconds,
      timeScale: 1,
      maxModelStateElements: b.maxModelStateElements,
      gradClipNorm: 1,
      device: b.hardware.accelerator === 'gpu' ? 'cuda' : 'cpu',
      task,
    },
  };
}

type DecodeBenchmark = Extract<EffectiveBenchmark, { kind: 'decode' }>;
type SpecOf = Extract<HarnessSpec, { kind: 'decode' }>;

/**
 * The harness spec of a decode run. Official: the hidden workloads (flagged `hidden`: the harness
 * mixes the run's secret nonce into their prompt seeds), paired. Public: the public workloads.
 * Baseline (an organizer's re-measure, `samples` timed samples of the baseline engine alone) and
 * calibration (baseline/reference pairs, `calibrate`): public and hidden workloads both, so the
 * cache or K they write covers the public workloads public runs are scored on as well as the
 * hidden ones of official runs. The cached baseline and K are filled in at dispatch, for the
 * agent's hardware key (Dispatcher.specFor).
 */
export function decodeSpec(
  b: DecodeBenchmark,
  mode: 'public' | 'official' | 'baseline' | 'calibration',
  opts: { samples?: number; calibrate?: SpecOf['calibrate'] } = {},
): SpecOf {
  const official = mode === 'official';
  const hidden = b.workloads.hidden.map((w) => {
    // The registry fills every hidden seed at boot (withHiddenSeeds); a definition built around it is a bug.
    if (w.seed === undefined) throw new Error(`${b.id}: hidden workload ${w.name} has no seed`);
    return { ...w, seed: w.seed };
  });
  const everything = [
    ...b.workloads.public,
    ...hidden.filter((h) => !b.workloads.public.some((p) => p.name === h.name)),
  ];
  const workloads =
    mode === 'baseline' || mode === 'calibration'
      ? everything
      : official
        ? hidden.map((w) => ({ ...w, hidden: true }))
        : b.workloads.public;
  return {
    kind: 'decode',
    benchmark: b.id,
    mode,
    rulesVersion: b.rulesVersion,
    model: { family: b.model.family, path: b.model.path },
    baselineEngine: b.baselineEngine,
    referenceEngine: b.referenceEngine ?? null,
    workloads,
    // Official runs: the least pairs. Public runs time the candidate once per workload, and
    // this is the baseline's sample count should no cached baseline exist (never cached then).
    samplesPerWorkload: opts.samples ?? b.samples.official,
    maxPairs: official ? b.samples.maxPairs : null,
    targetHalfWidthPct: official ? b.samples.targetHalfWidthPct : null,
    runSpreadPct: official ? b.samples.runSpreadPct : null,
    // every pairing with the reference (official, public with K, calibration) times it alike
    referenceTokensPct: b.samples.referenceTokensPct,
    warmupSamples: b.samples.warmup,
    limits: { ...b.limits, runSeconds: Math.min(b.limits.runSeconds, b.runTimeLimitSeconds) },
    checks: b.checks,
    baseline: null,
    calibration: null,
    calibrate: mode === 'calibration' ? (opts.calibrate ?? { ...b.calibration }) : null,
    promptNonce: null,
  };
}

/** The UTC day a run counts on, and when that day ends. */
export function utcDay(now: Date): { day: string; resetsAt: Date } {
  const day = now.toISOString().slice(0, 10);
  const resetsAt = new Date(`${day}T00:00:00.000Z`);
  resetsAt.setUTCDate(resetsAt.getUTCDate() + 1);
  return { day, resetsAt };
}

/** A benchmark's daily-limit buckets with their limits from the definition (decode: the hub's public cap where it sets none). */
export function quotaBuckets(
  b: EffectiveBenchmark,
  publicRunsPerDay: number,
): { bucket: string; limit: number | null }[] {
  if (b.kind === 'training') return b.tiers.map((t) => ({ bucket: t.id, limit: t.dailyLimit }));
  return (['public', 'official'] as const).map((m) => ({
    bucket: m,
    limit: b.dailyLimits[m] ?? (m === 'public' ? publicRunsPerDay : null),
  }));
}
