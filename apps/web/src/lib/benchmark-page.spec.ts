import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { parse } from 'yaml';
import { describe, expect, it } from 'vitest';
import { BenchmarkDefinition, type PublicBenchmark, type QuotaView } from '@dryft/libs';
import { BenchmarksService } from '../../../api/src/benchmarks/benchmarks.service';
import {
  baselineLine,
  decodeCli,
  decodeDailyLimits,
  decodePublishedValues,
  officialRunPromise,
  tierDurations,
  trainingCli,
  trainingDailyLimits,
} from './benchmark-page';

const ROOT = path.resolve(__dirname, '../../../..');

/** The public view the hub serves for a definition file, through the API's own toPublic. */
function publicOf(
  id: string,
  patch: (def: Record<string, unknown>) => void = () => undefined,
): PublicBenchmark {
  const raw = parse(readFileSync(path.join(ROOT, 'config/benchmarks', `${id}.yaml`), 'utf8')) as Record<
    string,
    unknown
  >;
  patch(raw);
  const def = BenchmarkDefinition.parse(raw);
  const service = new BenchmarksService(null as never, null as never, null as never);
  return service.toPublic({ ...def, rulesChangedAt: null, rulesChangedReason: null });
}
const fact = (b: PublicBenchmark, id: string) => decodePublishedValues(b).find((f) => f.testid === id)?.value;
const quota = (bucket: string, limit: number, used: number): QuotaView => ({
  bucket,
  limit,
  used,
  remaining: limit - used,
  refunded: 0,
  resetsAt: '2026-12-03T00:00:00.000Z',
});

describe('the decode page, from the live definition', () => {
  const qwen = publicOf('qwen3-4b-decode');

  it('states the published values of the definition', () => {
    expect(fact(qwen, 'fact-sample-budget')).toBe(
      '2 min per generate call; Engine(model_path) has 10 min to load (untimed for the score)',
    );
    expect(fact(qwen, 'fact-latency')).toBe('TPOT at most 100 ms in every sample');
    expect(fact(qwen, 'fact-memory')).toBe('peak GPU memory at most 40 GB (40,000,000,000 bytes)');
    expect(fact(qwen, 'fact-stability')).toContain('at most 30 % of their median');
    expect(fact(qwen, 'fact-tolerance')).toContain('within 0.4 of the row’s largest logit');
    expect(fact(qwen, 'fact-samples')).toBe(
      'public runs: 1 timed sample per public workload; official runs: at least 5 and at most 20 pairs per hidden workload (one sample of the candidate and one of the trusted engine each: the reference engine where K is calibrated for the GPU, else the baseline), added until the score’s 95 % interval is within ±1.5 %, after at most 4 warm-up samples per engine (fewer once its time has settled)',
    );
    expect(qwen.model).toEqual({
      checkpoint: 'Qwen/Qwen3-4B-Instruct-2507',
      revision: 'cdbee75f17c01a7cc42f958dc650907174af0554',
    });
    expect(qwen.runtime).toContain('PyTorch 2.5.1');
  });

  it('a changed limit changes the page text', () => {
    const changed = publicOf('qwen3-4b-decode', (d) => {
      (d.limits as Record<string, unknown>).sampleSeconds = 45;
      (d.limits as Record<string, unknown>).memoryBytes = 24e9;
      (d.checks as Record<string, unknown>).maxTpotMs = 60;
      (d.checks as Record<string, unknown>).maxTtftMs = 900;
      (d.checks as Record<string, unknown>).logitTolerance = 0;
      (d.samples as Record<string, unknown>).maxPairs = 5;
      d.dailyLimits = { public: 40, official: 3 };
    });
    expect(fact(changed, 'fact-sample-budget')).toMatch(/^45 s per generate call/);
    expect(fact(changed, 'fact-memory')).toContain('24 GB');
    expect(fact(changed, 'fact-latency')).toBe('TTFT at most 900 ms and TPOT at most 60 ms in every sample');
    expect(fact(changed, 'fact-tolerance')).toBe(
      'none: every token must be exactly the baseline’s greedy choice',
    );
    expect(fact(changed, 'fact-samples')).toContain(
      'official runs: 5 pairs per hidden workload (one sample of the candidate and one of the trusted engine each)',
    );
    expect(officialRunPromise(changed)).toBe(
      'Hidden workloads determine your score: 5 pairs each (the candidate beside the trusted engine). Each pair can take up to twice the 45 s sample budget; a run over the 1 h whole-run limit is canceled, with the limit named.',
    );
    expect(decodeDailyLimits(changed, null)).toMatch(
      /^Public runs: 40 per team per UTC day · Official runs: 3 per team per UTC day\./,
    );
    expect(decodeDailyLimits(changed, [quota('official', 3, 1)])).toContain(
      'Official runs: 3 per team per UTC day, 2 left today',
    );
  });

  it('the CPU benchmark says what it does not check', () => {
    const toy = publicOf('toy-decode');
    expect(fact(toy, 'fact-memory')).toBe('not checked on this benchmark');
    expect(fact(toy, 'fact-latency')).toBe('no latency ceiling on this benchmark');
    expect(fact(toy, 'fact-tolerance')).toContain('exactly the baseline’s greedy choice');
    expect(decodeDailyLimits(toy, null)).toMatch(
      /^Public runs: no daily limit · Official runs: no daily limit/,
    );
  });

  it('the CLI commands carry this hub and the whole-run limit; Windows uses dryft.cmd', () => {
    const cli = decodeCli(qwen, 'http://127.0.0.1:4123');
    expect(cli.template).toContain(
      'curl -fsSLo qwen3-4b-decode-template.tar.gz http://127.0.0.1:4123/api/benchmarks/qwen3-4b-decode/template',
    );
    expect(cli.install).toContain('this hub: http://127.0.0.1:4123');
    expect(cli.first).toContain('./bin/dryft run SUBMISSION_ID --mode public --wait 3600');
    expect(cli.windows).toContain('.\\bin\\dryft.cmd doctor');
    expect(cli.windows).not.toContain('dryft.exe');
    const later = publicOf('qwen3-4b-decode', (d) => (d.runTimeLimitSeconds = 1200));
    expect(decodeCli(later, 'http://h').first).toContain('--wait 1200');
  });

  it('the score line names the calibration when the hub has one, else the same-hardware baseline', () => {
    expect(baselineLine(qwen)).toBe('100 = the baseline, measured on the same hardware as your run.');
    const calibrated = {
      ...qwen,
      calibrations: [{ hardware: 'NVIDIA H200', halfWidthPct: 0.8, pairs: 20, runs: 12 }],
    };
    expect(baselineLine(calibrated)).toBe(
      '100 = the baseline; calibrated on NVIDIA H200 to ±0.8 % (12 runs of 20 pairs).',
    );
  });
});

describe('the training page, from the live definition', () => {
  const deep = publicOf('deep-recurrence');

  it('the daily limits and tier times are the definition’s, with what is left today', () => {
    expect(trainingDailyLimits(deep, null)).toBe(
      'Daily limits use UTC: Easy 60 · Medium 6 · Hard 1. Accepted failed runs count; rejected uploads do not.',
    );
    expect(trainingDailyLimits(deep, [quota('easy', 60, 3), quota('hard', 1, 1)])).toBe(
      'Daily limits use UTC: Easy 60 (57 left today) · Medium 6 · Hard 1 (0 left today). Accepted failed runs count; rejected uploads do not.',
    );
    expect(tierDurations(deep)).toBe('Easy 1 min · Medium 10 min · Hard 1 hour');
    expect(deep.maxModelStateElements).toBe(500_000_000);
  });

  it('a changed limit changes the page text', () => {
    const changed = publicOf('deep-recurrence', (d) => {
      const tiers = d.tiers as { id: string; dailyLimit: number; trainingSeconds: number }[];
      tiers[0].dailyLimit = 30;
      tiers[1].trainingSeconds = 300;
    });
    expect(trainingDailyLimits(changed, null)).toContain('Easy 30 · Medium 6 · Hard 1');
    expect(tierDurations(changed)).toBe('Easy 1 min · Medium 5 min · Hard 1 hour');
  });

  it('the CLI lines pass --tier and, for a practice tier, --dataset, against this hub', () => {
    const cli = trainingCli(deep, 'http://127.0.0.1:4123');
    expect(cli).toContain('curl -fsSLo dryft.cjs http://127.0.0.1:4123/api/cli/dryft.cjs');
    expect(cli).toContain('node dryft.cjs login');
    expect(cli).toContain('--benchmark deep-recurrence --tier easy --dataset square --wait 5400');
    expect(cli).toContain('--benchmark deep-recurrence --tier hard --yes');
    const cpu = trainingCli(publicOf('recurrence-cpu'), 'http://h');
    expect(cpu).toContain('--tier practice --dataset square');
    expect(cpu).not.toContain('--yes');
  });
});
