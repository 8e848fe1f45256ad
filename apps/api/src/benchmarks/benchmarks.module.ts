import { Module } from '@nestjs/common';
import { BenchmarkSettingsRepository } from './benchmark-settings.repository';
import { BenchmarksController } from './benchmarks.controller';
import { BenchmarksService } from './benchmarks.service';

@Module({
  controllers: [BenchmarksController],
  providers: [BenchmarksService, BenchmarkSettingsRepository],
  exports: [BenchmarksService],
})
export class BenchmarksModule {}
