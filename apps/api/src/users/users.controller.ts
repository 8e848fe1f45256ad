import { Body, Controller, Get, HttpCode, Post } from '@nestjs/common';
import type { MeView } from '@dryft/libs';
import { AuthService } from '../auth/auth.service';
import { CurrentPrincipal, Principal } from '../common/principal';
import { SwitchTeamDto } from './dto';

@Controller('api/me')
export class UsersController {
  constructor(private readonly auth: AuthService) {}

  @Get()
  me(@CurrentPrincipal() principal: Principal): Promise<MeView> {
    return this.auth.me(principal);
  }

  /** The account menu's team switch. */
  @Post('active-team')
  @HttpCode(200)
  switchTeam(@CurrentPrincipal() principal: Principal, @Body() body: SwitchTeamDto): Promise<MeView> {
    return this.auth.switchTeam(principal, body.teamId);
  }
}
