import { createHmac } from 'node:crypto';
import type { BenchmarkDefinition } from './definition';

/**
 * The prompt seed of a hidden workload whose definition supplies none: HMAC-SHA256 of the
 * install's secret over the benchmark and workload names, its first 31 bits. Without the secret
 * (a file in the hub's DATA_DIR, mode 0600) nobody can compute it from the public repository.
 */
export function deriveHiddenSeed(secret: string, benchmarkId: string, workload: string): number {
  const mac = createHmac('sha256', secret).update(`dryft-hidden-seed\0${benchmarkId}\0${workload}`).digest();
  return mac.readUInt32BE(0) & 0x7fffffff;
}

/** The definition with a seed on every hidden workload: its own where it has one, else derived. */
export function withHiddenSeeds(def: BenchmarkDefinition, secret: string): BenchmarkDefinition {
  if (def.kind !== 'decode') return def;
  if (def.workloads.hidden.every((w) => w.seed !== undefined)) return def;
  return {
    ...def,
    workloads: {
      ...def.workloads,
      hidden: def.workloads.hidden.map((w) =>
        w.seed !== undefined ? w : { ...w, seed: deriveHiddenSeed(secret, def.id, w.name) },
      ),
    },
  };
}
