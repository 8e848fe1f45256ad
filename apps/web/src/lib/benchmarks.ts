import type { PublicBenchmark } from '@dryft/libs';
import { api } from './api';

let cache: Promise<PublicBenchmark[]> | null = null;

/** The benchmarks, fetched once per page load (organizer pages refresh with `fresh`). */
export function loadBenchmarks(fresh = false): Promise<PublicBenchmark[]> {
  if (!cache || fresh) {
    cache = api<PublicBenchmark[]>('/api/benchmarks');
    cache.catch(() => (cache = null));
  }
  return cache;
}
