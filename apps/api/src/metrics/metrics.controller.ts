import { Controller, Get, Header, Res, UseGuards } from '@nestjs/common';
import type { Response } from 'express';
import { AdminGuard } from '../common/admin.guard';
import { HubMetrics } from './hub-metrics';

/** The same text a scraper reads on METRICS_PORT, for an organizer signed in to the web. */
@Controller('api/admin/metrics')
@UseGuards(AdminGuard)
export class MetricsController {
  constructor(private readonly metrics: HubMetrics) {}

  @Get()
  @Header('Cache-Control', 'no-store')
  async read(@Res() res: Response): Promise<void> {
    const text = await this.metrics.text();
    res.setHeader('Content-Type', this.metrics.contentType);
    res.send(text);
  }
}
