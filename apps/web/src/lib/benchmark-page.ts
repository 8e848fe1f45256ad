import type { PublicBenchmark, QuotaView } from '@dryft/libs';
import { formatDuration } from './format';

/**
 * The words and commands of a benchmark's page (`/benchmarks/:id`), computed from the live
 * definition: every figure the page promises comes from here, so a changed limit changes the page.
 */

export interface Fact {
  label: string;
  value: string;
  testid: string;
}

const n = (x: number) => x.toLocaleString('en-US');

function bytes(b: number): string {
  if (b >= 1e9) return `${+(b / 1e9).toFixed(1)} GB`;
  if (b >= 1e6) return `${+(b / 1e6).toFixed(1)} MB`;
  return `${n(b)} bytes`;
}

/** "Easy 1 min · Medium 10 min · Hard 1 hour": the tiers' training time. */
export function tierDurations(b: PublicBenchmark): string {
  return (b.tiers ?? [])
    .map((t) => `${t.title} ${t.trainingSeconds === 3600 ? '1 hour' : formatDuration(t.trainingSeconds)}`)
    .join(' · ');
}

/** "Daily limits use UTC: Easy 60 · Medium 6 · Hard 1." with what is left today when a quota is known. */
export function trainingDailyLimits(b: PublicBenchmark, quota: QuotaView[] | null): string {
  const parts = (b.tiers ?? []).map((t) => {
    const q = quota?.find((x) => x.bucket === t.id);
    const left = q && q.remaining !== null ? ` (${q.remaining} left today)` : '';
    return `${t.title} ${t.dailyLimit}${left}`;
  });
  return `Daily limits use UTC: ${parts.join(' · ')}. Accepted failed runs count; rejected uploads do not.`;
}

/** The ranked tier, if the benchmark has one (the Hard warning and the ranking line need it). */
export function rankedTier(b: PublicBenchmark) {
  return b.tiers?.find((t) => t.ranked) ?? null;
}

/** The decode benchmark's daily limits per mode, with what is left today for a signed-in team. */
export function decodeDailyLimits(b: PublicBenchmark, quota: QuotaView[] | null): string {
  const modes: ['public' | 'official', string][] = [
    ['public', 'Public runs'],
    ['official', 'Official runs'],
  ];
  return (
    modes
      .map(([mode, label]) => {
        const limit = b.dailyLimits?.[mode];
        const q = quota?.find((x) => x.bucket === mode);
        if (limit === undefined) return `${label}: no daily limit`;
        const left = q && q.remaining !== null ? `, ${q.remaining} left today` : '';
        return `${label}: ${limit} per team per UTC day${left}`;
      })
      .join(' · ') + '. Runs canceled before they start and runs the hub failed are refunded.'
  );
}

/** The published values of a decode benchmark, as the page lists them under Scoring and correctness. */
export function decodePublishedValues(b: PublicBenchmark): Fact[] {
  const facts: Fact[] = [];
  const l = b.limits;
  const c = b.checks;
  const s = b.samples;
  if (l) {
    facts.push({
      label: 'Per-sample budget',
      value: `${formatDuration(l.sampleSeconds)} per generate call; Engine(model_path) has ${formatDuration(l.loadSeconds)} to load (untimed for the score)`,
      testid: 'fact-sample-budget',
    });
    facts.push({
      label: 'Memory',
      value:
        l.memoryBytes === null
          ? 'not checked on this benchmark'
          : `peak ${b.hardware.accelerator === 'gpu' ? 'GPU ' : ''}memory at most ${bytes(l.memoryBytes)} (${n(l.memoryBytes)} bytes)`,
      testid: 'fact-memory',
    });
  }
  if (c) {
    const lat: string[] = [];
    if (c.maxTtftMs !== null) lat.push(`TTFT at most ${n(c.maxTtftMs)} ms`);
    if (c.maxTpotMs !== null) lat.push(`TPOT at most ${n(c.maxTpotMs)} ms`);
    facts.push({
      label: 'Latency (official runs)',
      value: lat.length ? `${lat.join(' and ')} in every sample` : 'no latency ceiling on this benchmark',
      testid: 'fact-latency',
    });
    facts.push({
      label: 'Timing stability (official runs)',
      value: `per workload, the interquartile range of the paired time ratios (the trusted engine's ÷ the candidate's) is at most ${n(c.maxRatioSpreadPct)} % of their median`,
      testid: 'fact-stability',
    });
    facts.push({
      label: 'Tolerance',
      value:
        c.logitTolerance === 0
          ? 'none: every token must be exactly the baseline’s greedy choice'
          : `a token is accepted where its logit is within ${c.logitTolerance} of the row’s largest logit`,
      testid: 'fact-tolerance',
    });
  }
  if (s) {
    const max = s.maxPairs ?? s.official;
    const pairs =
      max > s.official
        ? `at least ${s.official} and at most ${max} pairs per hidden workload (one sample of the candidate and one of the trusted engine each: the reference engine where K is calibrated for the GPU, else the baseline), added until the score’s 95 % interval is within ±${s.targetHalfWidthPct} %`
        : `${s.official} pairs per hidden workload (one sample of the candidate and one of the trusted engine each)`;
    facts.push({
      label: 'Samples and pairs',
      value: `public runs: ${s.public} timed sample per public workload; official runs: ${pairs}, after at most ${s.warmup} warm-up ${s.warmup === 1 ? 'sample' : 'samples'} per engine (fewer once its time has settled)`,
      testid: 'fact-samples',
    });
  }
  return facts;
}

/** What the official-run confirmation says will happen: pairs, the stopping rule, the time it may take. */
export function officialRunPromise(b: PublicBenchmark): string {
  const s = b.samples;
  if (!s) return 'Hidden workloads determine your score.';
  const max = s.maxPairs ?? s.official;
  const pairs =
    max > s.official
      ? `at least ${s.official} and up to ${max} pairs each (the candidate beside the trusted engine), until the score’s 95 % interval is within ±${s.targetHalfWidthPct} %`
      : `${s.official} pairs each (the candidate beside the trusted engine)`;
  const time = b.limits
    ? ` Each pair can take up to twice the ${formatDuration(b.limits.sampleSeconds)} sample budget; a run over the ${formatDuration(b.runTimeLimitSeconds)} whole-run limit is canceled, with the limit named.`
    : '';
  return `Hidden workloads determine your score: ${pairs}.${time}`;
}

/** The line under the score: 100 = the baseline, and how closely that was calibrated, where known. */
export function baselineLine(b: PublicBenchmark): string {
  const cal = b.calibrations ?? [];
  if (!cal.length) return '100 = the baseline, measured on the same hardware as your run.';
  return `100 = the baseline; calibrated on ${cal
    .map((c) => `${c.hardware} to ±${c.halfWidthPct} % (${c.runs} runs of ${c.pairs} pairs)`)
    .join(', ')}.`;
}

export interface CliBlocks {
  install: string;
  first: string;
  windows: string;
  loop: string;
  inspect: string;
  package: string;
  template: string;
}

/** The CLI commands of the decode page with this hub's address filled in. */
export function decodeCli(b: PublicBenchmark, origin: string): CliBlocks {
  const folder = b.starterFolder ?? b.id;
  const wait = b.runTimeLimitSeconds;
  return {
    template: [
      `curl -fsSLo ${folder}-template.tar.gz ${origin}/api/benchmarks/${b.id}/template`,
      `tar -xzf ${folder}-template.tar.gz`,
      `cd ${folder}`,
    ].join('\n'),
    install: [
      `./install-dryft.sh                 # macOS or Linux (this hub: ${origin})`,
      `# .\\install-dryft.ps1              # Windows PowerShell`,
      '',
      `export DRYFT_TOKEN="dryft_pat_REPLACE_ME"`,
      `./bin/dryft doctor`,
    ].join('\n'),
    windows: [
      `.\\install-dryft.ps1`,
      `$env:DRYFT_TOKEN = "dryft_pat_REPLACE_ME"`,
      `.\\bin\\dryft.cmd doctor`,
      `.\\bin\\dryft.cmd validate engine`,
      `.\\bin\\dryft.cmd submit engine`,
      `.\\bin\\dryft.cmd run SUBMISSION_ID --mode public --wait ${wait}`,
    ].join('\n'),
    first: [
      `./bin/dryft validate engine`,
      `./bin/dryft submit engine`,
      `./bin/dryft run SUBMISSION_ID --mode public --wait ${wait}`,
    ].join('\n'),
    loop: [
      `./bin/dryft submissions`,
      `./bin/dryft runs`,
      `./bin/dryft logs RUN_ID --follow`,
      `./bin/dryft result RUN_ID --wait --timeout ${wait}`,
      `./bin/dryft rank RUN_ID`,
      `./bin/dryft cancel RUN_ID --reason "superseded"`,
      `./bin/dryft --help`,
    ].join('\n'),
    inspect: '',
    package: [`./bin/dryft validate engine`, `./bin/dryft package engine --output submission.tar.gz`].join(
      '\n',
    ),
  };
}

/** The HTTP API calls of the decode page, against this hub. */
export function decodeHttp(b: PublicBenchmark, origin: string): string {
  return [
    `curl -H "Authorization: Bearer $DRYFT_TOKEN" \\`,
    `  -F benchmark=${b.id} -F file=@submission.tar.gz ${origin}/api/submissions`,
    `curl -H "Authorization: Bearer $DRYFT_TOKEN" -H "Idempotency-Key: $(uuidgen)" \\`,
    `  -H "Content-Type: application/json" -d '{"mode":"public"}' \\`,
    `  ${origin}/api/submissions/SUBMISSION_ID/runs`,
    `curl -H "Authorization: Bearer $DRYFT_TOKEN" "${origin}/api/runs/RUN_ID/logs?after=0"`,
    `curl -H "Authorization: Bearer $DRYFT_TOKEN" ${origin}/api/runs/RUN_ID/result`,
  ].join('\n');
}

/**
 * The single-file CLI lines: the CLI is one Node.js script this hub serves; `login` saves a team API
 * token once; submit needs --tier and, for a practice tier, --dataset.
 */
export function trainingCli(b: PublicBenchmark, origin: string): string {
  const practice = b.tiers?.find((t) => !t.ranked);
  const ranked = rankedTier(b);
  const lines = [
    `curl -fsSLo dryft.cjs ${origin}/api/cli/dryft.cjs   # the CLI: one Node.js 20+ script`,
    `export DRYFT_API_URL=${origin}`,
    `node dryft.cjs login   # once: paste a team API token at the hidden prompt`,
  ];
  if (practice)
    lines.push(
      `node dryft.cjs submit submission.py --benchmark ${b.id} --tier ${practice.id} --dataset ${practice.datasets[0]?.id ?? 'DATASET'} --wait ${b.runTimeLimitSeconds}`,
    );
  if (ranked) lines.push(`node dryft.cjs submit submission.py --benchmark ${b.id} --tier ${ranked.id} --yes`);
  return lines.join('\n');
}

/** "500 million" for the rules, "500,000,000" for the depth section. */
export function millions(x: number): string {
  return x % 1e6 === 0 ? `${n(x / 1e6)} million` : n(x);
}
export { n as formatCount };
