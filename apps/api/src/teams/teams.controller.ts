import { Body, Controller, Delete, Get, HttpCode, Param, Patch, Post } from '@nestjs/common';
import type { TeamDetail, TeamSummary } from '@dryft/libs';
import { CurrentPrincipal, Principal } from '../common/principal';
import { UuidParam } from '../common/uuid.pipe';
import { RateLimit } from '../rate-limits/rate-limit.guard';
import { ChangeRoleDto, CreateTeamDto, JoinTeamDto, LeaveTeamDto } from './dto';
import { TeamsService } from './teams.service';

@Controller('api/teams')
export class TeamsController {
  constructor(private readonly teams: TeamsService) {}

  @Get()
  mine(@CurrentPrincipal() principal: Principal): Promise<TeamSummary[]> {
    return this.teams
      .listMine(principal.user.id)
      .then((all) => (principal.via === 'token' ? all.filter((t) => t.id === principal.teamId) : all));
  }

  @Post()
  @RateLimit('create')
  create(@CurrentPrincipal() principal: Principal, @Body() body: CreateTeamDto): Promise<TeamDetail> {
    return this.teams.create(principal, body.name);
  }

  @Post('join')
  @HttpCode(200)
  @RateLimit('join')
  join(@CurrentPrincipal() principal: Principal, @Body() body: JoinTeamDto): Promise<TeamDetail> {
    return this.teams.join(principal, body.code);
  }

  @Get(':id')
  detail(
    @CurrentPrincipal() principal: Principal,
    @Param('id', new UuidParam('team')) id: string,
  ): Promise<TeamDetail> {
    return this.teams.detail(principal, id);
  }

  @Post(':id/invite-code')
  @HttpCode(200)
  regenerate(
    @CurrentPrincipal() principal: Principal,
    @Param('id', new UuidParam('team')) id: string,
  ): Promise<TeamDetail> {
    return this.teams.regenerateInviteCode(principal, id);
  }

  @Post(':id/leave')
  @HttpCode(200)
  leave(
    @CurrentPrincipal() principal: Principal,
    @Param('id', new UuidParam('team')) id: string,
    @Body() body: LeaveTeamDto,
  ) {
    return this.teams.leave(principal, id, body.newOwnerUserId);
  }

  @Delete(':id/members/:userId')
  remove(
    @CurrentPrincipal() principal: Principal,
    @Param('id', new UuidParam('team')) id: string,
    @Param('userId', new UuidParam('member')) userId: string,
  ): Promise<TeamDetail> {
    return this.teams.removeMember(principal, id, userId);
  }

  @Patch(':id/members/:userId')
  changeRole(
    @CurrentPrincipal() principal: Principal,
    @Param('id', new UuidParam('team')) id: string,
    @Param('userId', new UuidParam('member')) userId: string,
    @Body() body: ChangeRoleDto,
  ): Promise<TeamDetail> {
    return this.teams.changeRole(principal, id, userId, body.role);
  }
}
