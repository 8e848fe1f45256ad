import { Module } from '@nestjs/common';
import { BenchmarksModule } from '../benchmarks/benchmarks.module';
import { LeaderboardsModule } from '../leaderboards/leaderboards.module';
import { SubmissionsModule } from '../submissions/submissions.module';
import { TeamsModule } from '../teams/teams.module';
import { UsersModule } from '../users/users.module';
import { BaselineRemeasureService } from './baseline-remeasure.service';
import { IdempotencyRepository } from './idempotency.repository';
import { RunLifecycleService } from './run-lifecycle.service';
import { RunQueue } from './run-queue';
import { RunsController } from './runs.controller';
import { RunsRepository } from './runs.repository';
import { RunsService } from './runs.service';
import { StorageController } from './storage.controller';
import { WaitingService } from './waiting.service';

@Module({
  imports: [BenchmarksModule, SubmissionsModule, TeamsModule, UsersModule, LeaderboardsModule],
  controllers: [RunsController, StorageController],
  providers: [
    RunsService,
    BaselineRemeasureService,
    RunLifecycleService,
    RunsRepository,
    RunQueue,
    IdempotencyRepository,
    WaitingService,
  ],
  exports: [RunsService, RunLifecycleService, RunsRepository, RunQueue, WaitingService],
})
export class RunsModule {}
