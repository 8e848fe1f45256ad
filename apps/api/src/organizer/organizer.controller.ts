import { Body, Controller, Get, HttpCode, Param, Post, Query, Res, UseGuards } from '@nestjs/common';
import type { AdminRunView, ExportRow, RunView } from '@dryft/libs';
import type { Response } from 'express';
import { AdminGuard } from '../common/admin.guard';
import { CurrentPrincipal, Principal } from '../common/principal';
import { UuidParam } from '../common/uuid.pipe';
import { AdminRunsQueryDto, DisqualifyDto, ExportQueryDto, RefundRunDto } from './dto';
import { OrganizerService, toCsv } from './organizer.service';

@Controller()
@UseGuards(AdminGuard)
export class OrganizerController {
  constructor(private readonly organizer: OrganizerService) {}

  @Post('api/admin/runs/:id/disqualify')
  @HttpCode(200)
  disqualify(
    @CurrentPrincipal() principal: Principal,
    @Param('id', new UuidParam('run')) id: string,
    @Body() body: DisqualifyDto,
  ): Promise<RunView> {
    return this.organizer.disqualify(principal, id, body.reason);
  }

  @Post('api/admin/runs/:id/requalify')
  @HttpCode(200)
  requalify(
    @CurrentPrincipal() principal: Principal,
    @Param('id', new UuidParam('run')) id: string,
    @Body() body: DisqualifyDto,
  ): Promise<RunView> {
    return this.organizer.requalify(principal, id, body.reason);
  }

  @Post('api/admin/runs/:id/refund')
  @HttpCode(200)
  refund(
    @CurrentPrincipal() principal: Principal,
    @Param('id', new UuidParam('run')) id: string,
    @Body() body: RefundRunDto,
  ): Promise<RunView> {
    return this.organizer.refund(principal, id, body.reason);
  }

  @Get('api/admin/runs')
  runs(@Query() query: AdminRunsQueryDto): Promise<{ items: AdminRunView[]; nextCursor: string | null }> {
    return this.organizer.listRuns(query);
  }

  /** One run, organizers only: with its team and (official decode runs) the hidden prompts' nonce. */
  @Get('api/admin/runs/:id')
  run(@Param('id', new UuidParam('run')) id: string): Promise<AdminRunView> {
    return this.organizer.getRun(id);
  }

  @Get('api/admin/benchmarks/:id/export')
  async export(
    @Param('id') id: string,
    @Query() query: ExportQueryDto,
    @Res({ passthrough: true }) res: Response,
  ): Promise<{ benchmarkId: string; rulesVersion: number; what: string; rows: ExportRow[] } | string> {
    const { rulesVersion, rows } = await this.organizer.export(id, query.what);
    const name = `${id}-${query.what}-rules-v${rulesVersion}`;
    if (query.format === 'csv') {
      res.setHeader('Content-Type', 'text/csv; charset=utf-8');
      res.setHeader('Content-Disposition', `attachment; filename="${name}.csv"`);
      return toCsv(rows);
    }
    res.setHeader('Content-Disposition', `inline; filename="${name}.json"`);
    return { benchmarkId: id, rulesVersion, what: query.what, rows };
  }
}
