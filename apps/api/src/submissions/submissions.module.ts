import { Module } from '@nestjs/common';
import { AuditModule } from '../audit/audit.module';
import { BenchmarksModule } from '../benchmarks/benchmarks.module';
import { TeamsModule } from '../teams/teams.module';
import { UsersModule } from '../users/users.module';
import { IdempotencyRepository } from '../runs/idempotency.repository';
import { SubmissionCodeService } from './submission-code.service';
import { SubmissionsController } from './submissions.controller';
import { SubmissionsRepository } from './submissions.repository';
import { SubmissionsService } from './submissions.service';
import { UploadChecker } from './upload-checker';

@Module({
  imports: [AuditModule, BenchmarksModule, TeamsModule, UsersModule],
  controllers: [SubmissionsController],
  // IdempotencyRepository (stateless, over the data source): upload keys share the run keys' table.
  providers: [
    SubmissionsService,
    SubmissionCodeService,
    SubmissionsRepository,
    UploadChecker,
    IdempotencyRepository,
  ],
  exports: [SubmissionsService],
})
export class SubmissionsModule {}
