import { Module } from '@nestjs/common';
import { BenchmarksModule } from '../benchmarks/benchmarks.module';
import { RunsModule } from '../runs/runs.module';
import { SubmissionsModule } from '../submissions/submissions.module';
import { TeamsModule } from '../teams/teams.module';
import { UsersModule } from '../users/users.module';
import { DeliveryProcessor } from './delivery-processor.service';
import { GithubClient } from './github-client';
import { GithubController } from './github.controller';
import { GithubRepository } from './github.repository';
import { GithubService } from './github.service';
import { GithubWebhooksService } from './github-webhooks.service';

/** The GitHub App: connected repositories, run on push, Run now and delivery inspection. */
@Module({
  imports: [BenchmarksModule, RunsModule, SubmissionsModule, TeamsModule, UsersModule],
  controllers: [GithubController],
  providers: [GithubClient, GithubRepository, DeliveryProcessor, GithubService, GithubWebhooksService],
})
export class GithubModule {}
