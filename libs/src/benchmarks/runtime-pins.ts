import { z } from 'zod';

/**
 * The versions a benchmark's page pins (Python 3.11, PyTorch 2.5.1, …), by the names GPU agents
 * report their runtime under (apps/gpu-agent/src/config.ts probeRuntime): a run records the
 * runtime of the agent that ran it, and one that differs from a pin is marked on the run, in the
 * organizer's console and on the board, so results from mismatched agents are never mixed silently.
 */
export const RUNTIME_COMPONENTS = [
  'python',
  'cuda',
  'torch',
  'triton',
  'transformers',
  'safetensors',
  'tokenizers',
] as const;

export const RuntimePins = z
  .partialRecord(
    z.enum(RUNTIME_COMPONENTS),
    z.string().regex(/^\d+(\.\d+)*$/, 'a pin is a version such as 2.5.1 or 3.11'),
  )
  .describe('runtime pins');
export type RuntimePins = z.infer<typeof RuntimePins>;

/**
 * Whether a reported version is the pinned one: equal, or the pin followed by more of the same
 * version (3.11 holds 3.11.7; 2.5.1 holds 2.5.1+cu124 and 2.5.1.post1), never a longer number
 * (3.11 does not hold 3.110).
 */
export function versionHolds(pin: string, reported: string): boolean {
  if (reported === pin) return true;
  if (!reported.startsWith(pin)) return false;
  return /^[.+-]/.test(reported.slice(pin.length));
}

/**
 * What differs between a benchmark's pins and the runtime an agent reported, in words ("torch 2.6.0,
 * pinned 2.5.1"; "triton not reported, pinned 3.1.0"). Empty: every pin holds. An agent that
 * reported no runtime at all (an unprobed interpreter) fails every pin with one line.
 */
export function runtimeMismatches(
  pins: RuntimePins | undefined,
  runtime: Record<string, string> | null | undefined,
): string[] {
  const wanted = Object.entries(pins ?? {}) as [string, string][];
  if (wanted.length === 0) return [];
  if (!runtime || Object.keys(runtime).length === 0)
    return [`the agent reported no runtime, pinned ${wanted.map(([k, v]) => `${k} ${v}`).join(', ')}`];
  const out: string[] = [];
  for (const [name, pin] of wanted) {
    const reported = runtime[name];
    if (reported === undefined) out.push(`${name} not reported, pinned ${pin}`);
    else if (!versionHolds(pin, reported)) out.push(`${name} ${reported}, pinned ${pin}`);
  }
  return out;
}
