import { Module } from '@nestjs/common';
import { HubMetrics } from './hub-metrics';
import { MetricsController } from './metrics.controller';
import { MetricsRepository } from './metrics.repository';
import { MetricsServer } from './metrics-server';

/** Prometheus metrics: from the event bus and, at scrape time, from the database (hub-metrics.ts). */
@Module({
  controllers: [MetricsController],
  providers: [HubMetrics, MetricsRepository, MetricsServer],
  exports: [HubMetrics, MetricsServer],
})
export class MetricsModule {}
