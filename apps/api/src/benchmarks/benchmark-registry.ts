import type { BenchmarkDefinition } from '@dryft/libs';
import { loadBenchmarkDefinitions, withHiddenSeeds } from '@dryft/libs/node';

/** The definition files, read once at boot. Tests construct it with definitions of their own. */
export class BenchmarkRegistry {
  private readonly byId: Map<string, BenchmarkDefinition>;

  constructor(definitions: BenchmarkDefinition[]) {
    this.byId = new Map(definitions.map((d) => [d.id, d]));
  }

  static fromDirectory(dir: string): BenchmarkRegistry {
    return new BenchmarkRegistry(loadBenchmarkDefinitions(dir));
  }

  /**
   * This registry where every hidden workload has a seed: the definition's own, or one derived
   * from the install's secret (asked for only when some definition lacks a seed).
   */
  withHiddenSeeds(secret: () => string): BenchmarkRegistry {
    const defs = this.all();
    const missing = defs.some(
      (d) => d.kind === 'decode' && d.workloads.hidden.some((w) => w.seed === undefined),
    );
    if (!missing) return this;
    const s = secret();
    return new BenchmarkRegistry(defs.map((d) => withHiddenSeeds(d, s)));
  }

  all(): BenchmarkDefinition[] {
    return [...this.byId.values()];
  }

  get(id: string): BenchmarkDefinition | undefined {
    return this.byId.get(id);
  }
}
