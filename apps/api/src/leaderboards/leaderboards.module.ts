import { Module } from '@nestjs/common';
import { BenchmarksModule } from '../benchmarks/benchmarks.module';
import { TeamsModule } from '../teams/teams.module';
import { UsersModule } from '../users/users.module';
import { LeaderboardsController } from './leaderboards.controller';
import { LeaderboardsRepository } from './leaderboards.repository';
import { LeaderboardsService } from './leaderboards.service';
import { PublicSnapshots } from './public-snapshots';

@Module({
  imports: [BenchmarksModule, TeamsModule, UsersModule],
  controllers: [LeaderboardsController],
  providers: [LeaderboardsService, LeaderboardsRepository, PublicSnapshots],
  exports: [LeaderboardsService, PublicSnapshots],
})
export class LeaderboardsModule {}
