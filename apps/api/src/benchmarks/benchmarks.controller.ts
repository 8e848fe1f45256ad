import { Body, Controller, Get, HttpCode, Param, Patch, Post, UseGuards } from '@nestjs/common';
import type { PublicBenchmark } from '@dryft/libs';
import { AdminGuard } from '../common/admin.guard';
import { Public } from '../common/principal';
import { BenchmarksService } from './benchmarks.service';
import { BumpRulesDto, UpdateBenchmarkDto } from './dto';

@Controller()
export class BenchmarksController {
  constructor(private readonly benchmarks: BenchmarksService) {}

  @Public()
  @Get('api/benchmarks')
  async list(): Promise<PublicBenchmark[]> {
    return (await this.benchmarks.list()).map((b) => this.benchmarks.toPublic(b));
  }

  @Public()
  @Get('api/benchmarks/:id')
  async get(@Param('id') id: string): Promise<PublicBenchmark> {
    return this.benchmarks.toPublic(await this.benchmarks.get(id));
  }

  /** Organizer controls: open/close, whole-run time limit (applies to runs in progress), announcement. */
  @UseGuards(AdminGuard)
  @Patch('api/admin/benchmarks/:id')
  async update(@Param('id') id: string, @Body() body: UpdateBenchmarkDto): Promise<PublicBenchmark> {
    return this.benchmarks.toPublic(await this.benchmarks.update(id, body));
  }

  @UseGuards(AdminGuard)
  @Post('api/admin/benchmarks/:id/rules-version')
  @HttpCode(200)
  async bumpRules(@Param('id') id: string, @Body() body: BumpRulesDto): Promise<PublicBenchmark> {
    return this.benchmarks.toPublic(await this.benchmarks.bumpRulesVersion(id, body.reason));
  }
}
