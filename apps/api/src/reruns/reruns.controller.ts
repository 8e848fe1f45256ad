import { Body, Controller, Get, HttpCode, Param, Post, UseGuards } from '@nestjs/common';
import { RerunBestBody, RerunBody } from '@dryft/libs';
import type { FinalBoardAdminView, RerunBatchView } from '@dryft/libs';
import { createZodDto } from 'nestjs-zod';
import { AdminGuard } from '../common/admin.guard';
import { CurrentPrincipal, Principal } from '../common/principal';
import { UuidParam } from '../common/uuid.pipe';
import { RerunsService } from './reruns.service';

class RerunDto extends createZodDto(RerunBody) {}
class RerunBestDto extends createZodDto(RerunBestBody) {}

/** Organizers only: re-runs and the verified final board (docs/API.md, "Re-runs and the final board"). */
@Controller()
@UseGuards(AdminGuard)
export class RerunsController {
  constructor(private readonly reruns: RerunsService) {}

  @Post('api/admin/runs/:id/rerun')
  rerun(
    @CurrentPrincipal() principal: Principal,
    @Param('id', new UuidParam('run')) id: string,
    @Body() body: RerunDto,
  ): Promise<{ runId: string; batch: RerunBatchView }> {
    return this.reruns.rerunRun(principal, id, body);
  }

  @Post('api/admin/benchmarks/:id/reruns')
  rerunBest(
    @CurrentPrincipal() principal: Principal,
    @Param('id') id: string,
    @Body() body: RerunBestDto,
  ): Promise<RerunBatchView> {
    return this.reruns.rerunBest(principal, id, body.reason);
  }

  @Get('api/admin/benchmarks/:id/reruns')
  batches(@Param('id') id: string): Promise<{ items: RerunBatchView[] }> {
    return this.reruns.listBatches(id);
  }

  @Post('api/admin/benchmarks/:id/final-board')
  startFinal(
    @CurrentPrincipal() principal: Principal,
    @Param('id') id: string,
    @Body() body: RerunBestDto,
  ): Promise<FinalBoardAdminView> {
    return this.reruns.startFinalBoard(principal, id, body.reason);
  }

  @Get('api/admin/benchmarks/:id/final-board')
  finalBoard(@Param('id') id: string): Promise<FinalBoardAdminView> {
    return this.reruns.finalBoard(id);
  }

  @Post('api/admin/benchmarks/:id/final-board/publish')
  @HttpCode(200)
  publish(
    @CurrentPrincipal() principal: Principal,
    @Param('id') id: string,
    @Body() body: RerunBestDto,
  ): Promise<FinalBoardAdminView> {
    return this.reruns.publish(principal, id, body.reason);
  }
}
