import { describe, expect, it } from 'vitest';
import type { AgentCapabilities, BenchmarkDefinition } from '@dryft/libs';
import { agentFits, slotModes } from '../src/agents/dispatcher.service';

const caps = (over: Partial<AgentCapabilities>): AgentCapabilities => ({
  accelerator: 'gpu',
  gpuModel: 'NVIDIA H100 80GB HBM3',
  gpuCount: 2,
  driver: null,
  harnessVersion: 't',
  agentVersion: 't',
  benchmarks: [],
  ...over,
});
const def = (id: string, accelerator: 'cpu' | 'gpu', gpuModels: string[] = []) =>
  ({ id, hardware: { accelerator, gpuModels } }) as unknown as BenchmarkDefinition;

describe('dispatch eligibility', () => {
  it('matches hardware and declared benchmarks', () => {
    expect(agentFits(def('toy-decode', 'cpu'), caps({ accelerator: 'cpu', gpuModel: null }))).toBe(true);
    expect(agentFits(def('toy-decode', 'cpu'), caps({}))).toBe(false);
    expect(agentFits(def('qwen', 'gpu', ['NVIDIA H100 80GB HBM3']), caps({}))).toBe(true);
    expect(agentFits(def('qwen', 'gpu', ['NVIDIA H200']), caps({}))).toBe(false);
    expect(agentFits(def('qwen', 'gpu', ['NVIDIA H100 80GB HBM3']), caps({ benchmarks: ['other'] }))).toBe(
      false,
    );
  });

  it('never lets an official run share a GPU', () => {
    const slots = [
      { index: 0, gpus: ['0'] },
      { index: 1, gpus: ['1'] },
      { index: 2, gpus: ['1'] },
    ];
    expect(slotModes(slots[0], slots, [{ slot: 1, mode: 'official' }])).toEqual({
      allowPublic: true,
      allowOfficial: true,
    });
    expect(slotModes(slots[2], slots, [{ slot: 1, mode: 'official' }])).toEqual({
      allowPublic: false,
      allowOfficial: false,
    });
    // A baseline re-measure is timed like an official run: it never shares a GPU either.
    expect(slotModes(slots[2], slots, [{ slot: 1, mode: 'baseline' }])).toEqual({
      allowPublic: false,
      allowOfficial: false,
    });
    expect(slotModes(slots[2], slots, [{ slot: 1, mode: 'public' }])).toEqual({
      allowPublic: true,
      allowOfficial: false,
    });
    const cpu = [
      { index: 0, gpus: [] },
      { index: 1, gpus: [] },
    ];
    expect(slotModes(cpu[1], cpu, [{ slot: 0, mode: 'public' }])).toEqual({
      allowPublic: true,
      allowOfficial: false,
    });
  });
});
