import {
  Body,
  Controller,
  Delete,
  Get,
  Headers,
  HttpCode,
  Param,
  Post,
  Query,
  Res,
  UseGuards,
} from '@nestjs/common';
import type { Response } from 'express';
import type { BaselinesView, LogsPage, QuotaView, RankView, RunResultView, RunView } from '@dryft/libs';
import { AdminGuard } from '../common/admin.guard';
import { CurrentPrincipal, Principal } from '../common/principal';
import { UuidParam } from '../common/uuid.pipe';
import { RateLimit } from '../rate-limits/rate-limit.guard';
import { LeaderboardsService } from '../leaderboards/leaderboards.service';
import { BaselineRemeasureService } from './baseline-remeasure.service';
import {
  BaselineRemeasureDto,
  CancelRunDto,
  CreateRunDto,
  LogsQueryDto,
  QuotaQueryDto,
  RunsListQueryDto,
} from './dto';
import { RunsService } from './runs.service';

@Controller()
export class RunsController {
  constructor(
    private readonly runs: RunsService,
    private readonly leaderboards: LeaderboardsService,
    private readonly remeasures: BaselineRemeasureService,
  ) {}

  /** Starts a run; send an Idempotency-Key and reuse it when retrying an uncertain request. */
  @Post('api/submissions/:id/runs')
  @RateLimit('runs')
  async create(
    @CurrentPrincipal() principal: Principal,
    @Param('id', new UuidParam('submission')) id: string,
    @Body() body: CreateRunDto,
    @Headers('idempotency-key') key: string | undefined,
    @Res({ passthrough: true }) res: Response,
  ) {
    const out = await this.runs.create(principal, { submissionId: id, body, idempotencyKey: key });
    res.status(out.status);
    if (out.replayed) res.setHeader('Idempotent-Replayed', 'true');
    return out.body;
  }

  @Get('api/runs')
  list(@CurrentPrincipal() principal: Principal, @Query() query: RunsListQueryDto) {
    return this.runs.list(principal, {
      benchmarkId: query.benchmark,
      status: query.status,
      submissionId: query.submission,
      cursor: query.cursor,
      limit: query.limit ?? 20,
    });
  }

  @Get('api/runs/:id')
  get(
    @CurrentPrincipal() principal: Principal,
    @Param('id', new UuidParam('run')) id: string,
  ): Promise<RunView> {
    return this.runs.get(principal, id);
  }

  /** Pages of log lines: pass `nextAfter` as the next `after` until `complete`. */
  @Get('api/runs/:id/logs')
  logs(
    @CurrentPrincipal() principal: Principal,
    @Param('id', new UuidParam('run')) id: string,
    @Query() query: LogsQueryDto,
  ): Promise<LogsPage> {
    return this.runs.logs(principal, id, query.after ?? 0, query.limit ?? 1000);
  }

  @Get('api/runs/:id/result')
  result(
    @CurrentPrincipal() principal: Principal,
    @Param('id', new UuidParam('run')) id: string,
  ): Promise<RunResultView> {
    return this.runs.result(principal, id);
  }

  @Get('api/runs/:id/rank')
  async rank(
    @CurrentPrincipal() principal: Principal,
    @Param('id', new UuidParam('run')) id: string,
  ): Promise<RankView> {
    return this.leaderboards.rank(await this.runs.getAuthorized(principal, id));
  }

  @Post('api/runs/:id/cancel')
  @HttpCode(200)
  cancel(
    @CurrentPrincipal() principal: Principal,
    @Param('id', new UuidParam('run')) id: string,
    @Body() body: CancelRunDto,
  ) {
    return this.runs.cancel(principal, id, body);
  }

  @Get('api/quota')
  quota(@CurrentPrincipal() principal: Principal, @Query() query: QuotaQueryDto): Promise<QuotaView[]> {
    return this.runs.quota(principal, query.benchmark);
  }

  /**
   * Organizers: forget cached baselines (the next run measures the baseline again) and pooled K's
   * with their calibration history (official runs fall back to the baseline pairing), one hardware
   * key or all.
   */
  @UseGuards(AdminGuard)
  @Delete('api/admin/benchmarks/:id/baselines')
  forget(
    @CurrentPrincipal() principal: Principal,
    @Param('id') id: string,
    @Query('hardware') hardware?: string,
    @Query('reason') reason?: string,
  ): Promise<{ deleted: number; calibrations: number }> {
    return this.remeasures.forget(principal, id, hardware, reason);
  }

  /** Organizers: the cached baselines of a benchmark and its latest baseline re-measures. */
  @UseGuards(AdminGuard)
  @Get('api/admin/benchmarks/:id/baselines')
  baselines(@Param('id') id: string): Promise<BaselinesView> {
    return this.remeasures.list(id);
  }

  /**
   * Organizers: queue a re-measure of the baseline engine alone on one hardware key (replaces its
   * cache), or (mode `calibration`) the runs of a calibration of K on that key (`run`: the first).
   */
  @UseGuards(AdminGuard)
  @Post('api/admin/benchmarks/:id/baselines/remeasure')
  async queueRemeasure(
    @CurrentPrincipal() principal: Principal,
    @Param('id') id: string,
    @Body() body: BaselineRemeasureDto,
  ): Promise<{ run: RunView; runs: RunView[] }> {
    const runs = await this.remeasures.queue(principal, id, body);
    return { run: runs[0], runs };
  }
}
