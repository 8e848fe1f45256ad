import { Module } from '@nestjs/common';
import { BenchmarksModule } from '../benchmarks/benchmarks.module';
import { LeaderboardsModule } from '../leaderboards/leaderboards.module';
import { RunsModule } from '../runs/runs.module';
import { TeamsModule } from '../teams/teams.module';
import { OrganizerController } from './organizer.controller';
import { OrganizerRepository } from './organizer.repository';
import { OrganizerService } from './organizer.service';

@Module({
  imports: [BenchmarksModule, LeaderboardsModule, RunsModule, TeamsModule],
  controllers: [OrganizerController],
  providers: [OrganizerService, OrganizerRepository],
})
export class OrganizerModule {}
