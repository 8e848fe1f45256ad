import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { BenchmarkDefinition } from '../src/index';
import { loadBenchmarkDefinitions } from '../src/node';

const ROOT = path.resolve(__dirname, '../..');

describe('benchmark definition: samples.runSpreadPct', () => {
  const toy = loadBenchmarkDefinitions(path.join(ROOT, 'config/benchmarks')).find(
    (d) => d.id === 'toy-decode',
  )!;

  it('is read from the definition, and 0 (none) when left out', () => {
    expect(toy.kind === 'decode' && toy.samples.runSpreadPct).toBe(1.25);
    const raw = JSON.parse(JSON.stringify(toy)) as { samples: Record<string, unknown> };
    delete raw.samples.runSpreadPct;
    const parsed = BenchmarkDefinition.parse(raw);
    expect(parsed.kind === 'decode' && parsed.samples.runSpreadPct).toBe(0);
  });

  it.each([-1, 25, '1.25'])('refuses %j, naming the field', (value) => {
    const raw = JSON.parse(JSON.stringify(toy)) as { samples: Record<string, unknown> };
    raw.samples.runSpreadPct = value;
    const res = BenchmarkDefinition.safeParse(raw);
    expect(res.success).toBe(false);
    expect(res.error!.issues.map((i) => i.path.join('.'))).toContain('samples.runSpreadPct');
  });
});

describe('benchmark definition: samples.referenceTokensPct', () => {
  const defs = loadBenchmarkDefinitions(path.join(ROOT, 'config/benchmarks'));
  const toy = defs.find((d) => d.id === 'toy-decode')!;
  const qwen = defs.find((d) => d.id === 'qwen3-4b-decode')!;

  it('is 50 for qwen3 (its reference times half samples) and 100 (whole) when left out', () => {
    expect(qwen.kind === 'decode' && qwen.samples.referenceTokensPct).toBe(50);
    expect(qwen.rulesVersion).toBeGreaterThanOrEqual(3); // K under version 2 timed whole samples
    expect(toy.kind === 'decode' && toy.samples.referenceTokensPct).toBe(100);
    const raw = JSON.parse(JSON.stringify(toy)) as { samples: Record<string, unknown> };
    delete raw.samples.referenceTokensPct;
    const parsed = BenchmarkDefinition.parse(raw);
    expect(parsed.kind === 'decode' && parsed.samples.referenceTokensPct).toBe(100);
  });

  it.each([0, -5, 101, '50'])('refuses %j, naming the field', (value) => {
    const raw = JSON.parse(JSON.stringify(toy)) as { samples: Record<string, unknown> };
    raw.samples.referenceTokensPct = value;
    const res = BenchmarkDefinition.safeParse(raw);
    expect(res.success).toBe(false);
    expect(res.error!.issues.map((i) => i.path.join('.'))).toContain('samples.referenceTokensPct');
  });
});
