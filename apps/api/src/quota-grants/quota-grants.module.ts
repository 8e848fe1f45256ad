import { Module } from '@nestjs/common';
import { AuditModule } from '../audit/audit.module';
import { BenchmarksModule } from '../benchmarks/benchmarks.module';
import { TeamsModule } from '../teams/teams.module';
import { UsersModule } from '../users/users.module';
import { QuotaGrantsController } from './quota-grants.controller';
import { QuotaGrantsRepository } from './quota-grants.repository';
import { QuotaGrantsService } from './quota-grants.service';

@Module({
  imports: [AuditModule, BenchmarksModule, TeamsModule, UsersModule],
  controllers: [QuotaGrantsController],
  providers: [QuotaGrantsService, QuotaGrantsRepository],
  exports: [QuotaGrantsService],
})
export class QuotaGrantsModule {}
