import { Module } from '@nestjs/common';
import { BenchmarksModule } from '../benchmarks/benchmarks.module';
import { RunsModule } from '../runs/runs.module';
import { TeamsModule } from '../teams/teams.module';
import { UsersModule } from '../users/users.module';
import { FinalBoardNotices } from './final-board-notices';
import { WebhooksController } from './webhooks.controller';
import { WebhooksRepository } from './webhooks.repository';
import { WebhooksService } from './webhooks.service';

@Module({
  imports: [BenchmarksModule, RunsModule, TeamsModule, UsersModule],
  controllers: [WebhooksController],
  providers: [WebhooksService, WebhooksRepository, FinalBoardNotices],
})
export class NotificationsModule {}
