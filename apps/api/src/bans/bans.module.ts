import { Module } from '@nestjs/common';
import { BenchmarksModule } from '../benchmarks/benchmarks.module';
import { TeamsModule } from '../teams/teams.module';
import { UsersModule } from '../users/users.module';
import { BansController } from './bans.controller';
import { BansService } from './bans.service';

@Module({
  imports: [UsersModule, TeamsModule, BenchmarksModule],
  controllers: [BansController],
  providers: [BansService],
})
export class BansModule {}
