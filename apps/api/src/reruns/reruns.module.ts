import { Module } from '@nestjs/common';
import { BenchmarksModule } from '../benchmarks/benchmarks.module';
import { LeaderboardsModule } from '../leaderboards/leaderboards.module';
import { RunsModule } from '../runs/runs.module';
import { RerunsController } from './reruns.controller';
import { RerunsRepository } from './reruns.repository';
import { RerunsService } from './reruns.service';

@Module({
  imports: [BenchmarksModule, LeaderboardsModule, RunsModule],
  controllers: [RerunsController],
  providers: [RerunsService, RerunsRepository],
})
export class RerunsModule {}
