import { Body, Controller, Get, HttpCode, Param, Post, Query, UseGuards } from '@nestjs/common';
import type { BanView, MyBanView } from '@dryft/libs';
import { AdminGuard } from '../common/admin.guard';
import { CurrentPrincipal, Principal } from '../common/principal';
import { UuidParam } from '../common/uuid.pipe';
import { BansService } from './bans.service';
import { CreateBanDto, LiftBanDto } from './dto';

@Controller()
export class BansController {
  constructor(private readonly bans: BansService) {}

  @UseGuards(AdminGuard)
  @Post('api/admin/bans')
  create(@CurrentPrincipal() principal: Principal, @Body() body: CreateBanDto): Promise<BanView> {
    return this.bans.create(principal, body);
  }

  @UseGuards(AdminGuard)
  @Get('api/admin/bans')
  list(@Query('active') active?: string): Promise<BanView[]> {
    return this.bans.list(active === 'true' || active === '1');
  }

  @UseGuards(AdminGuard)
  @Post('api/admin/bans/:id/lift')
  @HttpCode(200)
  lift(
    @CurrentPrincipal() principal: Principal,
    @Param('id', new UuidParam('ban')) id: string,
    @Body() body: LiftBanDto,
  ): Promise<BanView> {
    return this.bans.lift(principal, id, body.reason);
  }

  /** A participant's own bans in force: reason and end, so the web and the CLI can say why. */
  @Get('api/me/bans')
  mine(@CurrentPrincipal() principal: Principal): Promise<MyBanView[]> {
    return this.bans.mine(principal);
  }
}
