import { Body, Controller, Delete, Get, Param, Patch, Post, Put, Query, UseGuards } from '@nestjs/common';
import type { BenchmarkClockView, ScheduledActionView } from '@dryft/libs';
import { AdminGuard } from '../common/admin.guard';
import { CurrentPrincipal, Principal, Public } from '../common/principal';
import { UuidParam } from '../common/uuid.pipe';
import { MoveScheduleDto, ScheduleDto, SetRoundDto } from './dto';
import { RoundClockService } from './round-clock.service';

@Controller()
export class RoundClockController {
  constructor(private readonly clocks: RoundClockService) {}

  /** Public: the round, what is open now, and the pending scheduled opens/closes. */
  @Public()
  @Get('api/benchmarks/:id/clock')
  clock(@Param('id') id: string): Promise<BenchmarkClockView> {
    return this.clocks.view(id);
  }

  @UseGuards(AdminGuard)
  @Put('api/admin/benchmarks/:id/round')
  setRound(
    @CurrentPrincipal() principal: Principal,
    @Param('id') id: string,
    @Body() body: SetRoundDto,
  ): Promise<BenchmarkClockView> {
    return this.clocks.setRound(principal, id, body);
  }

  @UseGuards(AdminGuard)
  @Delete('api/admin/benchmarks/:id/round')
  clearRound(
    @CurrentPrincipal() principal: Principal,
    @Param('id') id: string,
    @Query('reason') reason?: string,
  ): Promise<BenchmarkClockView> {
    return this.clocks.clearRound(principal, id, reason);
  }

  @UseGuards(AdminGuard)
  @Post('api/admin/benchmarks/:id/schedule')
  schedule(
    @CurrentPrincipal() principal: Principal,
    @Param('id') id: string,
    @Body() body: ScheduleDto,
  ): Promise<ScheduledActionView> {
    return this.clocks.schedule(principal, id, body);
  }

  @UseGuards(AdminGuard)
  @Get('api/admin/schedule')
  list(@Query('benchmark') benchmark?: string): Promise<ScheduledActionView[]> {
    return this.clocks.list(benchmark);
  }

  @UseGuards(AdminGuard)
  @Patch('api/admin/schedule/:id')
  move(
    @CurrentPrincipal() principal: Principal,
    @Param('id', new UuidParam('schedule')) id: string,
    @Body() body: MoveScheduleDto,
  ): Promise<ScheduledActionView> {
    return this.clocks.move(principal, id, body);
  }

  @UseGuards(AdminGuard)
  @Delete('api/admin/schedule/:id')
  cancel(
    @CurrentPrincipal() principal: Principal,
    @Param('id', new UuidParam('schedule')) id: string,
    @Query('reason') reason?: string,
  ): Promise<ScheduledActionView> {
    return this.clocks.cancel(principal, id, reason);
  }
}
