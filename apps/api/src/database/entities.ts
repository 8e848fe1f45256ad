import { SessionEntity } from '../auth/session.entity';
import { BenchmarkSettingsEntity } from '../benchmarks/benchmark-settings.entity';
import { MembershipEntity } from '../teams/membership.entity';
import { TeamEntity } from '../teams/team.entity';
import { ApiTokenEntity } from '../tokens/api-token.entity';
import { UserEntity } from '../users/user.entity';
import { SubmissionEntity } from '../submissions/submission.entity';
import { RunEntity } from '../runs/run.entity';
import { RunLogChunkEntity } from '../runs/run-log-chunk.entity';
import { RunSampleEntity } from '../runs/run-sample.entity';
import { RunCheckEntity } from '../runs/run-check.entity';
import { RunMetricEntity } from '../runs/run-metric.entity';
import { IdempotencyKeyEntity } from '../runs/idempotency-key.entity';
import { BaselineEntity } from '../runs/baseline.entity';
import { CalibrationRunEntity } from '../runs/calibration-run.entity';
import { CalibrationEntity } from '../runs/calibration.entity';
import { AgentEntity } from '../agents/agent.entity';
import { GithubInstallationEntity } from '../github/github-installation.entity';
import { GithubInstallStateEntity } from '../github/github-install-state.entity';
import { RepositoryConnectionEntity } from '../github/repository-connection.entity';
import { GithubDeliveryEntity } from '../github/github-delivery.entity';
import { AuditEntryEntity } from '../audit/audit-entry.entity';
import { BanEntity } from '../bans/ban.entity';
import { RoundClockEntity } from '../round-clock/round-clock.entity';
import { ScheduledActionEntity } from '../round-clock/scheduled-action.entity';
import { TeamWebhookEntity } from '../notifications/team-webhook.entity';
import { WebhookDeliveryEntity } from '../notifications/webhook-delivery.entity';
import { QuotaGrantEntity } from '../quota-grants/quota-grant.entity';
import { RerunBatchEntity } from '../reruns/rerun-batch.entity';
import { FinalBoardEntity } from '../leaderboards/final-board.entity';

/** Every entity; the migrations must describe exactly these (a test checks). */
export const ENTITIES = [
  UserEntity,
  SessionEntity,
  TeamEntity,
  MembershipEntity,
  ApiTokenEntity,
  BenchmarkSettingsEntity,
  SubmissionEntity,
  RunEntity,
  RunLogChunkEntity,
  RunSampleEntity,
  RunCheckEntity,
  RunMetricEntity,
  IdempotencyKeyEntity,
  BaselineEntity,
  CalibrationRunEntity,
  CalibrationEntity,
  AgentEntity,
  GithubInstallationEntity,
  GithubInstallStateEntity,
  RepositoryConnectionEntity,
  GithubDeliveryEntity,
  AuditEntryEntity,
  BanEntity,
  RoundClockEntity,
  ScheduledActionEntity,
  TeamWebhookEntity,
  WebhookDeliveryEntity,
  QuotaGrantEntity,
  RerunBatchEntity,
  FinalBoardEntity,
];
