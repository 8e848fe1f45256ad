import { Module } from '@nestjs/common';
import { BenchmarksModule } from '../benchmarks/benchmarks.module';
import { LeaderboardsModule } from '../leaderboards/leaderboards.module';
import { QuotaGrantsModule } from '../quota-grants/quota-grants.module';
import { SubmissionsModule } from '../submissions/submissions.module';
import { TeamsModule } from '../teams/teams.module';
import { UsersModule } from '../users/users.module';
import { BaselineRemeasureService } from './baseline-remeasure.service';
import { IdempotencyRepository } from './idempotency.repository';
import { RunLifecycleService } from './run-lifecycle.service';
import { RunLog } from './run-log';
import { RunLogRepository } from './run-log.repository';
import { RunPoliciesService } from './run-policies.service';
import { RunQueue } from './run-queue';
import { RunViews } from './run-views';
import { RunsController } from './runs.controller';
import { RunsRepository } from './runs.repository';
import { RunsService } from './runs.service';
import { WaitingService } from './waiting.service';

@Module({
  imports: [
    BenchmarksModule,
    SubmissionsModule,
    TeamsModule,
    UsersModule,
    LeaderboardsModule,
    QuotaGrantsModule,
  ],
  controllers: [RunsController],
  providers: [
    RunPoliciesService,
    RunsService,
    BaselineRemeasureService,
    RunLifecycleService,
    RunViews,
    RunLog,
    RunLogRepository,
    RunsRepository,
    RunQueue,
    IdempotencyRepository,
    WaitingService,
  ],
  exports: [RunsService, RunLifecycleService, RunViews, RunLog, RunsRepository, RunQueue, WaitingService],
})
export class RunsModule {}
