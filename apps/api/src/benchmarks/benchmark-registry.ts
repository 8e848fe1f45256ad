import type { BenchmarkDefinition } from '@dryft/libs';
import { loadBenchmarkDefinitions } from '@dryft/libs/node';

/** The definition files, read once at boot. Tests construct it with definitions of their own. */
export class BenchmarkRegistry {
  private readonly byId: Map<string, BenchmarkDefinition>;

  constructor(definitions: BenchmarkDefinition[]) {
    this.byId = new Map(definitions.map((d) => [d.id, d]));
  }

  static fromDirectory(dir: string): BenchmarkRegistry {
    return new BenchmarkRegistry(loadBenchmarkDefinitions(dir));
  }

  all(): BenchmarkDefinition[] {
    return [...this.byId.values()];
  }

  get(id: string): BenchmarkDefinition | undefined {
    return this.byId.get(id);
  }
}
