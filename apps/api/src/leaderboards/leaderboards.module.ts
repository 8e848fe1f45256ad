import { Module } from '@nestjs/common';
import { BenchmarksModule } from '../benchmarks/benchmarks.module';
import { TeamsModule } from '../teams/teams.module';
import { UsersModule } from '../users/users.module';
import { LeaderboardsController } from './leaderboards.controller';
import { LeaderboardsRepository } from './leaderboards.repository';
import { LeaderboardsService } from './leaderboards.service';

@Module({
  imports: [BenchmarksModule, TeamsModule, UsersModule],
  controllers: [LeaderboardsController],
  providers: [LeaderboardsService, LeaderboardsRepository],
  exports: [LeaderboardsService],
})
export class LeaderboardsModule {}
