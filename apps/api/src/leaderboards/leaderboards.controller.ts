import { Controller, Get, Param, Query, Req, Res } from '@nestjs/common';
import type { Request, Response } from 'express';
import { badRequest } from '../common/errors';
import { Public } from '../common/principal';
import { PublicSnapshots, sendSnapshot } from './public-snapshots';

/**
 * Spectators read these (boards, benchmark definitions, team pages) without signing in. Served from memory (PublicSnapshots) with a strong ETag:
 * a reader that sends `If-None-Match` gets 304 until the board or the team changes.
 */
@Controller()
export class LeaderboardsController {
  constructor(private readonly snapshots: PublicSnapshots) {}

  @Public()
  @Get('api/benchmarks')
  async benchmarks(@Req() req: Request, @Res() res: Response): Promise<void> {
    sendSnapshot(req, res, await this.snapshots.benchmarkList());
  }

  @Public()
  @Get('api/benchmarks/:id')
  async benchmark(@Param('id') id: string, @Req() req: Request, @Res() res: Response): Promise<void> {
    sendSnapshot(req, res, await this.snapshots.benchmark(id));
  }

  /** `?board=final`: the organizer's published verified final board (404 until published); default the live one. */
  @Public()
  @Get(['api/leaderboards/:benchmarkId', 'api/benchmarks/:benchmarkId/leaderboard'])
  async get(
    @Param('benchmarkId') benchmarkId: string,
    @Query('board') board: unknown,
    @Req() req: Request,
    @Res() res: Response,
  ): Promise<void> {
    if (board !== undefined && board !== 'live' && board !== 'final')
      throw badRequest(
        'invalid_board',
        'board must be "live" (the default) or "final" (the published final board).',
      );
    sendSnapshot(
      req,
      res,
      await (board === 'final'
        ? this.snapshots.finalBoard(benchmarkId)
        : this.snapshots.leaderboard(benchmarkId)),
    );
  }

  @Public()
  @Get('api/public/teams/:slug')
  async team(@Param('slug') slug: string, @Req() req: Request, @Res() res: Response): Promise<void> {
    sendSnapshot(req, res, await this.snapshots.teamPage(slug));
  }
}
