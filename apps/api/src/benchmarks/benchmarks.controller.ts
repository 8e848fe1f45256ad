import { Body, Controller, HttpCode, Param, Patch, Post, UseGuards } from '@nestjs/common';
import type { PublicBenchmark } from '@dryft/libs';
import { AdminGuard } from '../common/admin.guard';
import { CurrentPrincipal, Principal } from '../common/principal';
import { BenchmarksService } from './benchmarks.service';
import { BumpRulesDto, UpdateBenchmarkDto } from './dto';

@Controller()
export class BenchmarksController {
  constructor(private readonly benchmarks: BenchmarksService) {}

  // The public reads (GET api/benchmarks, api/benchmarks/:id) are served from memory by
  // LeaderboardsController (PublicSnapshots).

  /** Organizer controls: open/close, whole-run time limit (applies to runs in progress), announcement. */
  @UseGuards(AdminGuard)
  @Patch('api/admin/benchmarks/:id')
  async update(
    @CurrentPrincipal() principal: Principal,
    @Param('id') id: string,
    @Body() body: UpdateBenchmarkDto,
  ): Promise<PublicBenchmark> {
    const { reason, ...patch } = body;
    return this.benchmarks.toPublic(await this.benchmarks.changeSettings(principal, id, patch, reason));
  }

  @UseGuards(AdminGuard)
  @Post('api/admin/benchmarks/:id/rules-version')
  @HttpCode(200)
  async bumpRules(
    @CurrentPrincipal() principal: Principal,
    @Param('id') id: string,
    @Body() body: BumpRulesDto,
  ): Promise<PublicBenchmark> {
    return this.benchmarks.toPublic(await this.benchmarks.bumpRulesVersion(principal, id, body.reason));
  }
}
