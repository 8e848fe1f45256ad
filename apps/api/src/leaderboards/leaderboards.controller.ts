import { Controller, Get, Param } from '@nestjs/common';
import type { LeaderboardView, TeamPageView } from '@dryft/libs';
import { Public } from '../common/principal';
import { LeaderboardsService } from './leaderboards.service';

/** Spectators read these without signing in. */
@Controller()
export class LeaderboardsController {
  constructor(private readonly leaderboards: LeaderboardsService) {}

  @Public()
  @Get('api/leaderboards/:benchmarkId')
  get(@Param('benchmarkId') benchmarkId: string): Promise<LeaderboardView> {
    return this.leaderboards.get(benchmarkId);
  }

  @Public()
  @Get('api/public/teams/:slug')
  team(@Param('slug') slug: string): Promise<TeamPageView> {
    return this.leaderboards.teamPage(slug);
  }
}
