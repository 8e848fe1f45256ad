import { afterEach, describe, expect, it } from 'vitest';
import { cli, json, resultBody, runView, stubServer, TOKEN } from './helpers';

/** `dryft compare RUN RUN`: issue 33's side-by-side view, from each run's result. */
const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  while (closers.length) await closers.pop()!();
});

const A = 'aaaaaaaa-0000-4000-8000-000000000001';
const B = 'bbbbbbbb-0000-4000-8000-000000000002';
const workload = (over: Record<string, unknown>) => ({
  workload: 'short',
  samples: 5,
  tps: 1000,
  ttftMs: 10,
  tpotMs: 1,
  totalMs: 100,
  spreadPct: 2,
  speedup: 1,
  ...over,
});
const result = resultBody;

async function hub(results: Record<string, unknown>) {
  const seen: string[] = [];
  const stub = await stubServer((req, res) => {
    seen.push(req.path);
    const id = /^\/api\/runs\/([^/]+)\/result$/.exec(req.path)?.[1];
    if (id && results[id]) return json(res, 200, results[id]);
    json(res, 404, { error: { code: 'run_not_found', message: `No run ${id}` } });
  });
  closers.push(stub.close);
  return { env: { DRYFT_TOKEN: TOKEN, DRYFT_API_URL: stub.url }, seen };
}

describe('dryft compare', () => {
  it('prints decode runs side by side per workload, deltas against the first, the best starred', async () => {
    const slow = runView({ id: A, status: 'succeeded', score: 100, submissionName: 'slow #1' });
    const fast = runView({
      id: B,
      status: 'succeeded',
      score: 150,
      mode: 'official',
      submissionName: 'fast #2',
    });
    const { env } = await hub({
      [A]: result(slow, { workloads: [workload({ tpotMs: 2, ttftMs: 20, speedup: 1 })] }),
      [B]: result(fast, {
        interval: { low: 147, high: 153, halfWidth: 3, level: 0.95 },
        workloads: [workload({ tpotMs: 1, ttftMs: 25, speedup: 2 })],
      }),
    });
    const r = await cli(['compare', A, B], env);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain('Comparing 2 runs of toy-decode (deltas against the first; * the best):');
    expect(r.stdout).toContain('  1. slow #1 · aaaaaaaa: public, succeeded, score 100');
    expect(r.stdout).toContain(
      '  2. fast #2 · bbbbbbbb: official, succeeded, score 150 ± 3.00 (95 % interval 147.00–153.00)',
    );
    expect(r.stdout).toMatch(/score\s+100\s+150 \(\+50\.0%\) \*/);
    expect(r.stdout).toMatch(/short · TPOT ms\s+2\s+1 \(-50\.0%\) \*/);
    expect(r.stdout).toMatch(/short · TTFT ms\s+20 \*\s+25 \(\+25\.0%\)/);

    const j = await cli(['compare', A, B, '--json'], env);
    expect(j.code, j.stderr).toBe(0);
    const parsed = JSON.parse(j.stdout);
    expect(parsed.kind).toBe('decode');
    expect(parsed.rows[0]).toMatchObject({ label: 'score', values: [100, 150], best: 1 });
  });

  it('refuses one run, a repeated run and runs of two benchmarks, saying what to change', async () => {
    const { env, seen } = await hub({
      [A]: result(runView({ id: A, status: 'succeeded', score: 1 })),
      [B]: result(runView({ id: B, status: 'succeeded', score: 2, benchmarkId: 'qwen3-4b-decode' })),
    });
    const one = await cli(['compare', A], env);
    expect(one.code).toBe(2);
    expect(one.stderr).toContain('Name at least 2 runs to compare');
    const twice = await cli(['compare', A, A], env);
    expect(twice.code).toBe(2);
    expect(twice.stderr).toContain('is named twice');
    expect(seen).toEqual([]); // refused before asking the hub
    const mixed = await cli(['compare', A, B], env);
    expect(mixed.code).toBe(2);
    expect(mixed.stderr).toContain(
      'Runs of different benchmarks cannot be compared (toy-decode, qwen3-4b-decode)',
    );
    const unknown = await cli(['compare', A, 'cccccccc-0000-4000-8000-000000000003'], env);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain('Copy the Run ID');
  });
});
