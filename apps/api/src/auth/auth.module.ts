import { Module } from '@nestjs/common';
import { APP_GUARD } from '@nestjs/core';
import { TeamsModule } from '../teams/teams.module';
import { TokensModule } from '../tokens/tokens.module';
import { UsersController } from '../users/users.controller';
import { UsersModule } from '../users/users.module';
import { AuthController, GithubGate } from './auth.controller';
import { AuthGuard } from './auth.guard';
import { AuthService } from './auth.service';
import { SessionsRepository } from './sessions.repository';
import { GithubStrategy } from './strategies/github.strategy';

@Module({
  imports: [UsersModule, TeamsModule, TokensModule],
  controllers: [AuthController, UsersController],
  providers: [
    AuthService,
    SessionsRepository,
    GithubStrategy,
    GithubGate,
    { provide: APP_GUARD, useClass: AuthGuard },
  ],
  exports: [AuthService],
})
export class AuthModule {}
