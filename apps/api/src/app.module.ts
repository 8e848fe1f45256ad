import { DynamicModule, Module } from '@nestjs/common';
import { QuotaGrantsModule } from './quota-grants/quota-grants.module';
import { APP_FILTER, APP_PIPE } from '@nestjs/core';
import { ZodValidationPipe } from 'nestjs-zod';
import { AuthModule } from './auth/auth.module';
import { BenchmarksModule } from './benchmarks/benchmarks.module';
import { ErrorFilter } from './common/error.filter';
import { CoreDeps, CoreModule } from './core.module';
import { HealthController } from './health/health.controller';
import { TeamsModule } from './teams/teams.module';
import { TokensModule } from './tokens/tokens.module';
import { UsersModule } from './users/users.module';
import { SubmissionsModule } from './submissions/submissions.module';
import { RunsModule } from './runs/runs.module';
import { LeaderboardsModule } from './leaderboards/leaderboards.module';
import { AgentsModule } from './agents/agents.module';
import { LiveModule } from './live/live.module';
import { GithubModule } from './github/github.module';
import { CliModule } from './cli/cli.module';
import { AuditModule } from './audit/audit.module';
import { BanPolicyModule } from './bans/ban-policy.module';
import { BansModule } from './bans/bans.module';
import { OrganizerModule } from './organizer/organizer.module';
import { RerunsModule } from './reruns/reruns.module';
import { RoundClockModule } from './round-clock/round-clock.module';
import { NotificationsModule } from './notifications/notifications.module';
import { RateLimitsModule } from './rate-limits/rate-limits.module';
import { StorageModule } from './storage/storage.module';
import { MetricsModule } from './metrics/metrics.module';

@Module({})
export class AppModule {
  static forRoot(deps: CoreDeps): DynamicModule {
    return {
      module: AppModule,
      imports: [
        CoreModule.forRoot(deps),
        AuditModule,
        RateLimitsModule,
        BanPolicyModule,
        UsersModule,
        BenchmarksModule,
        TeamsModule,
        TokensModule,
        AuthModule,
        SubmissionsModule,
        RunsModule,
        LeaderboardsModule,
        AgentsModule,
        LiveModule,
        CliModule,
        GithubModule,
        BansModule,
        OrganizerModule,
        RerunsModule,
        RoundClockModule,
        NotificationsModule,
        StorageModule,
        QuotaGrantsModule,
        MetricsModule,
      ],
      controllers: [HealthController],
      providers: [
        { provide: APP_PIPE, useClass: ZodValidationPipe },
        { provide: APP_FILTER, useClass: ErrorFilter },
      ],
    };
  }
}
