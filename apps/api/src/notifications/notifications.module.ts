import { Module } from '@nestjs/common';
import { RunsModule } from '../runs/runs.module';
import { TeamsModule } from '../teams/teams.module';
import { UsersModule } from '../users/users.module';
import { WebhookJobs } from './webhook-jobs';
import { WebhooksController } from './webhooks.controller';
import { WebhooksRepository } from './webhooks.repository';
import { WebhooksService } from './webhooks.service';

@Module({
  imports: [RunsModule, TeamsModule, UsersModule],
  controllers: [WebhooksController],
  providers: [WebhooksService, WebhooksRepository, WebhookJobs],
})
export class NotificationsModule {}
