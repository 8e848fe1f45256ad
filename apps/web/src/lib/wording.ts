import type { PublicBenchmark } from '@dryft/libs';

/**
 * Words the practice pages share, from the benchmark's definition: a tier that does not exist is
 * never named, a practice tier called "Practice" is not said twice, and CLI hints carry the
 * options the CLI requires.
 */

/** The mode badge: "Public", "Official", "Practice · Easy", "Practice", "Hard", "Baseline re-measure". */
export function modeLabel(
  mode: 'public' | 'official' | 'baseline' | 'calibration',
  tier: string | null | undefined,
): string {
  if (mode === 'baseline') return 'Baseline re-measure';
  if (mode === 'calibration') return 'Calibration of K';
  if (!tier) return mode === 'official' ? 'Official' : 'Public';
  const name = tier[0].toUpperCase() + tier.slice(1);
  if (mode === 'official') return name;
  return /^practice\b/i.test(tier) ? 'Practice' : `Practice · ${name}`;
}

const titles = (b: PublicBenchmark, ranked: boolean) =>
  (b.tiers ?? []).filter((t) => t.ranked === ranked).map((t) => t.title);

/** What ranks and what does not, for a submission's "Run it" card. */
export function rankingSentence(b: PublicBenchmark): string {
  if (!b.tiers?.length)
    return 'Public runs measure the public workloads once, for feedback; they never change the leaderboard. Official runs rank.';
  const practice = titles(b, false);
  const ranked = titles(b, true);
  const first = practice.length
    ? `Practice runs (${practice.join(', ')}) train on a practice dataset, for feedback; they never change the leaderboard.`
    : '';
  const second = ranked.length
    ? `${ranked.join(', ')} runs rank.`
    : 'This benchmark has no ranked tier: none of its runs ranks.';
  return [first, second].filter(Boolean).join(' ');
}

/** The Submissions page's "open a submission and start …". */
export function startWhat(b: PublicBenchmark | null): string {
  if (!b?.tiers?.length) return 'a public or official run';
  const ranked = titles(b, true);
  return ranked.length ? `a practice or a ranked ${ranked.join(' or ')} run` : 'a practice run';
}

/** The CLI line for a submission: --tier and, for a practice tier, --dataset; --mode for engines. */
export function cliRunHint(b: PublicBenchmark | null, submissionId: string): string {
  const tier = b?.tiers?.find((t) => !t.ranked) ?? b?.tiers?.[0];
  if (!tier) return `dryft run ${submissionId} --mode public`;
  const dataset = !tier.ranked && tier.datasets[0] ? ` --dataset ${tier.datasets[0].id}` : '';
  return `dryft run ${submissionId} --tier ${tier.id}${dataset}`;
}
