import { describe, expect, it } from 'vitest';
import type { PublicBenchmark } from '@dryft/libs';
import { cliRunHint, modeLabel, rankingSentence, startWhat } from './wording';

const tier = (
  id: string,
  title: string,
  ranked: boolean,
  datasets = [{ id: 'square', title: 'Square' }],
) => ({
  id,
  title,
  ranked,
  trainingSeconds: 30,
  dailyLimit: 10,
  datasets: ranked ? [] : datasets,
});
const bench = (tiers?: ReturnType<typeof tier>[]) => ({ id: 'b', tiers }) as unknown as PublicBenchmark;
const cpu = bench([tier('practice', 'Practice (CPU)', false)]);
const gpu = bench([tier('easy', 'Easy', false), tier('medium', 'Medium', false), tier('hard', 'Hard', true)]);

describe('practice wording', () => {
  it('names a tier called practice once', () => {
    expect(modeLabel('public', 'practice')).toBe('Practice');
    expect(modeLabel('public', 'easy')).toBe('Practice · Easy');
    expect(modeLabel('official', 'hard')).toBe('Hard');
    expect(modeLabel('public', null)).toBe('Public');
  });

  it('never names a ranked tier a benchmark does not have', () => {
    expect(rankingSentence(cpu)).toBe(
      'Practice runs (Practice (CPU)) train on a practice dataset, for feedback; they never change the leaderboard. This benchmark has no ranked tier: none of its runs ranks.',
    );
    expect(rankingSentence(cpu)).not.toContain('. runs rank');
    expect(rankingSentence(gpu)).toContain('Hard runs rank.');
    expect(startWhat(cpu)).toBe('a practice run');
    expect(startWhat(gpu)).toBe('a practice or a ranked Hard run');
    expect(startWhat(bench())).toBe('a public or official run');
  });

  it('the CLI hint carries the --dataset a practice tier requires', () => {
    expect(cliRunHint(cpu, 'abc')).toBe('dryft run abc --tier practice --dataset square');
    expect(cliRunHint(gpu, 'abc')).toBe('dryft run abc --tier easy --dataset square');
    expect(cliRunHint(bench(), 'abc')).toBe('dryft run abc --mode public');
  });
});
