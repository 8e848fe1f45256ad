import type { Registry } from 'prom-client';

/**
 * prom-client's default metrics (process CPU, memory, handles, event-loop lag, heap, version) but
 * not its GC duration histogram. That one subscribes a PerformanceObserver to every garbage
 * collection, and the hub collects very often (it parses and serialises log batches): measured
 * with bench/metrics-cost.mjs, parsing and serialising 50-line batches took 8 % more CPU in a
 * process with every default metric, and 1 % more (inside the noise) without the GC observer
 * (bench/RESULTS.md). Issue 34 allows the metrics 2 %.
 *
 * prom-client 15 has no switch for one default metric, so its modules are registered one by one,
 * as its own collectDefaultMetrics does (lib/defaultMetrics.js), each required by name so that the
 * pack's bundler finds them.
 */
type DefaultMetric = (registry: Registry, config: { eventLoopMonitoringPrecision: number }) => void;

/* eslint-disable @typescript-eslint/no-require-imports */
const DEFAULT_METRICS_BUT_GC: DefaultMetric[] = [
  require('prom-client/lib/metrics/processCpuTotal'),
  require('prom-client/lib/metrics/processStartTime'),
  require('prom-client/lib/metrics/osMemoryHeap'),
  require('prom-client/lib/metrics/processOpenFileDescriptors'),
  require('prom-client/lib/metrics/processMaxFileDescriptors'),
  require('prom-client/lib/metrics/eventLoopLag'),
  ...(typeof process.getActiveResourcesInfo === 'function'
    ? [require('prom-client/lib/metrics/processResources')]
    : []),
  require('prom-client/lib/metrics/processHandles'),
  require('prom-client/lib/metrics/processRequests'),
  require('prom-client/lib/metrics/heapSizeAndUsed'),
  require('prom-client/lib/metrics/heapSpacesSizeAndUsed'),
  require('prom-client/lib/metrics/version'),
];
/* eslint-enable @typescript-eslint/no-require-imports */

/** Registers the default metrics, less the GC histogram, in REGISTRY (10 ms event-loop precision, as prom-client's default). */
export function collectDefaultMetricsButGc(registry: Registry): void {
  for (const metric of DEFAULT_METRICS_BUT_GC) metric(registry, { eventLoopMonitoringPrecision: 10 });
}
