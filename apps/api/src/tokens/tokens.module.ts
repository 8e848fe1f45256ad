import { Module } from '@nestjs/common';
import { TeamsModule } from '../teams/teams.module';
import { UsersModule } from '../users/users.module';
import { TokensController } from './tokens.controller';
import { TokensRepository } from './tokens.repository';
import { TokensService } from './tokens.service';

@Module({
  imports: [TeamsModule, UsersModule],
  controllers: [TokensController],
  providers: [TokensService, TokensRepository],
  exports: [TokensService],
})
export class TokensModule {}
