import type { AgentCapabilities } from '../protocol/agents';
import type { BenchmarkDefinition } from './definition';

/**
 * Which agents can take which benchmark, and how long a queued run will wait: shared by the
 * dispatcher (who takes a run), the run view (why it waits) and the organizer's agents page.
 */

type Def = Pick<BenchmarkDefinition, 'id' | 'kind' | 'hardware'>;

/** Whether the agent's hardware qualifies, ignoring what it declares it carries. */
export function hardwareFits(def: Def, caps: AgentCapabilities): boolean {
  if (def.hardware.accelerator === 'cpu') return caps.accelerator === 'cpu';
  return (
    caps.accelerator === 'gpu' && caps.gpuModel !== null && def.hardware.gpuModels.includes(caps.gpuModel)
  );
}

/** Why an agent whose hardware fits still cannot run the benchmark, or null when it can. */
export function cannotRunReason(def: Def, caps: AgentCapabilities): string | null {
  if (caps.benchmarks.length > 0 && !caps.benchmarks.includes(def.id))
    return `it carries only ${caps.benchmarks.join(', ')}`;
  const missing = caps.cannotRun?.[def.kind];
  return missing ?? null;
}

/** Whether an agent's hardware and declared benchmarks fit a benchmark definition. */
export function agentFits(def: Def, caps: AgentCapabilities): boolean {
  return hardwareFits(def, caps) && cannotRunReason(def, caps) === null;
}

/** "an NVIDIA H100 or H200", "a CPU agent". */
export function hardwareNeeds(def: Def): string {
  if (def.hardware.accelerator === 'cpu') return 'a CPU agent';
  const families = [
    ...new Set(def.hardware.gpuModels.map((m) => m.replace(/^NVIDIA\s+/i, '').split(/\s+/)[0])),
  ];
  return families.length ? `an NVIDIA ${families.join(' or ')}` : 'a GPU agent';
}

/** "cpu", "NVIDIA H100 80GB HBM3 ×8". */
export function agentHardware(caps: AgentCapabilities): string {
  if (caps.accelerator === 'cpu') return 'cpu';
  const model = caps.gpuModel ?? 'unknown GPU';
  return caps.gpuCount > 1 ? `${model} ×${caps.gpuCount}` : model;
}

/**
 * Seconds until the run at `position` (1 = next) starts, simulating the capable slots: a busy slot
 * frees after its expected remaining time, every run ahead takes `runSeconds`. Null without slots.
 */
export function estimateStartSeconds(opts: {
  position: number;
  /** Per capable slot: seconds until it is free (0 when free now). */
  slotFreeIn: number[];
  runSeconds: number;
}): number | null {
  if (opts.slotFreeIn.length === 0) return null;
  const free = [...opts.slotFreeIn].sort((a, b) => a - b);
  for (let k = 1; k < opts.position; k++) {
    // The run ahead takes the earliest free slot, which then frees after one more run.
    free[0] += opts.runSeconds;
    free.sort((a, b) => a - b);
  }
  return Math.max(0, Math.round(free[0]));
}
