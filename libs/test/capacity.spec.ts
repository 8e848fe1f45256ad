import { describe, expect, it } from 'vitest';
import {
  agentFits,
  agentHardware,
  estimateStartSeconds,
  hardwareNeeds,
  type AgentCapabilities,
} from '../src/index';

const cpu: AgentCapabilities = {
  accelerator: 'cpu',
  gpuModel: null,
  gpuCount: 0,
  driver: null,
  harnessVersion: 't',
  agentVersion: 't',
  benchmarks: [],
  cannotRun: {},
};
const gpuDef = {
  id: 'deep-recurrence',
  kind: 'training' as const,
  hardware: {
    accelerator: 'gpu' as const,
    gpuModels: ['NVIDIA H100 80GB HBM3', 'NVIDIA H100 PCIe', 'NVIDIA H200'],
  },
};
const cpuTraining = {
  id: 'cpu-practice',
  kind: 'training' as const,
  hardware: { accelerator: 'cpu' as const, gpuModels: [] },
};

describe('capacity words and estimate', () => {
  it('names what a benchmark needs and what an agent has', () => {
    expect(hardwareNeeds(gpuDef)).toBe('an NVIDIA H100 or H200');
    expect(hardwareNeeds(cpuTraining)).toBe('a CPU agent');
    expect(agentHardware(cpu)).toBe('cpu');
    expect(agentHardware({ ...cpu, accelerator: 'gpu', gpuModel: 'NVIDIA H200', gpuCount: 8 })).toBe(
      'NVIDIA H200 ×8',
    );
  });

  it('an agent that cannot run a kind (no torch) is not given it', () => {
    expect(agentFits(cpuTraining, cpu)).toBe(true);
    expect(agentFits(cpuTraining, { ...cpu, cannotRun: { training: 'no torch' } })).toBe(false);
    expect(
      agentFits({ ...cpuTraining, kind: 'decode' }, { ...cpu, cannotRun: { training: 'no torch' } }),
    ).toBe(true);
    expect(agentFits(gpuDef, cpu)).toBe(false);
  });

  it('simulates the slots: free now, busy, and runs ahead in line', () => {
    expect(estimateStartSeconds({ position: 1, slotFreeIn: [], runSeconds: 60 })).toBeNull();
    expect(estimateStartSeconds({ position: 1, slotFreeIn: [0], runSeconds: 60 })).toBe(0);
    expect(estimateStartSeconds({ position: 1, slotFreeIn: [40], runSeconds: 60 })).toBe(40);
    expect(estimateStartSeconds({ position: 3, slotFreeIn: [40], runSeconds: 60 })).toBe(160);
    expect(estimateStartSeconds({ position: 3, slotFreeIn: [10, 30], runSeconds: 60 })).toBe(70);
  });
});
