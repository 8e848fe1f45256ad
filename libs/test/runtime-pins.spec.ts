import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { BenchmarkDefinition, runtimeMismatches, versionHolds } from '../src/index';
import { loadBenchmarkDefinitions } from '../src/node';

const ROOT = path.resolve(__dirname, '../..');
const defs = loadBenchmarkDefinitions(path.join(ROOT, 'config/benchmarks'));

describe('runtime pins', () => {
  it.each([
    ['3.11', '3.11', true],
    ['3.11', '3.11.9', true],
    ['2.5.1', '2.5.1+cu124', true],
    ['2.5.1', '2.5.1.post1', true],
    ['3.11', '3.110', false],
    ['3.11', '3.12.3', false],
    ['2.5.1', '2.5.10', false],
    ['2.5.1', '2.5', false],
  ])('pin %s holds %s: %s', (pin, reported, holds) => {
    expect(versionHolds(pin, reported)).toBe(holds);
  });

  it('names every pin that does not hold, in the pins’ order, and nothing when all hold', () => {
    const pins = { python: '3.11', torch: '2.5.1', triton: '3.1.0' };
    expect(
      runtimeMismatches(pins, { python: '3.11.4', torch: '2.5.1+cu124', triton: '3.1.0', driver: '550' }),
    ).toEqual([]);
    expect(runtimeMismatches(pins, { python: '3.12.1', torch: '2.5.1' })).toEqual([
      'python 3.12.1, pinned 3.11',
      'triton not reported, pinned 3.1.0',
    ]);
    expect(runtimeMismatches(pins, null)).toEqual([
      'the agent reported no runtime, pinned python 3.11, torch 2.5.1, triton 3.1.0',
    ]);
    expect(runtimeMismatches(undefined, { python: '3.9' })).toEqual([]);
  });

  it('the GPU benchmarks pin what their page says; the CPU practice ones pin nothing', () => {
    const byId = new Map(defs.map((d) => [d.id, d]));
    const qwen = byId.get('qwen3-4b-decode')!;
    // the page's words (definition `runtime`) and the pins agree, name by name
    const words = qwen.kind === 'decode' ? qwen.runtime! : '';
    const named: Record<string, string> = {
      python: 'Python',
      cuda: 'CUDA',
      torch: 'PyTorch',
      triton: 'Triton',
      transformers: 'Transformers',
      safetensors: 'safetensors',
      tokenizers: 'tokenizers',
    };
    expect(Object.keys(qwen.runtimePins!).sort()).toEqual(Object.keys(named).sort());
    for (const [key, pin] of Object.entries(qwen.runtimePins!))
      expect(words).toContain(`${named[key]} ${pin}`);
    expect(byId.get('deep-recurrence')!.runtimePins).toMatchObject({
      python: '3.11',
      torch: '2.5.1',
      cuda: '12.4',
    });
    expect(byId.get('toy-decode')!.runtimePins).toBeUndefined();
    expect(byId.get('recurrence-cpu')!.runtimePins).toBeUndefined();
  });

  it('refuses a pin that is not a version, or a component agents do not report, naming the field', () => {
    const toy = JSON.parse(JSON.stringify(defs.find((d) => d.id === 'toy-decode'))) as Record<
      string,
      unknown
    >;
    for (const runtimePins of [{ torch: 'latest' }, { numpy: '1.26' }]) {
      const res = BenchmarkDefinition.safeParse({ ...toy, runtimePins });
      expect(res.success).toBe(false);
      expect(res.error!.issues.map((i) => i.path.join('.')).join(' ')).toMatch(/^runtimePins/);
    }
  });
});
