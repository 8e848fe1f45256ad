import { Body, Controller, Delete, Get, Param, Post } from '@nestjs/common';
import type { CreatedTokenView, TokenView } from '@dryft/libs';
import { CurrentPrincipal, Principal } from '../common/principal';
import { UuidParam } from '../common/uuid.pipe';
import { RateLimit } from '../rate-limits/rate-limit.guard';
import { CreateTokenDto } from './dto';
import { TokensService } from './tokens.service';

@Controller('api/teams/:teamId/tokens')
export class TokensController {
  constructor(private readonly tokens: TokensService) {}

  @Get()
  list(
    @CurrentPrincipal() principal: Principal,
    @Param('teamId', new UuidParam('team')) teamId: string,
  ): Promise<TokenView[]> {
    return this.tokens.list(principal, teamId);
  }

  /** The only response that ever contains the token's full value. */
  @Post()
  @RateLimit('create')
  create(
    @CurrentPrincipal() principal: Principal,
    @Param('teamId', new UuidParam('team')) teamId: string,
    @Body() body: CreateTokenDto,
  ): Promise<CreatedTokenView> {
    return this.tokens.create(principal, teamId, body.name, body.expiresAt);
  }

  @Delete(':tokenId')
  revoke(
    @CurrentPrincipal() principal: Principal,
    @Param('teamId', new UuidParam('team')) teamId: string,
    @Param('tokenId', new UuidParam('token')) tokenId: string,
  ): Promise<TokenView> {
    return this.tokens.revoke(principal, teamId, tokenId);
  }
}
