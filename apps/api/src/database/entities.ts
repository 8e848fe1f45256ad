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
import { AgentEntity } from '../agents/agent.entity';
import { GITHUB_ENTITIES } from '../github/entities';
import { AuditEntryEntity } from '../audit/audit-entry.entity';
import { BanEntity } from '../bans/ban.entity';
import { RoundClockEntity, ScheduledActionEntity } from '../round-clock/round-clock.entities';
import { TeamWebhookEntity, WebhookDeliveryEntity } from '../notifications/webhook.entities';

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
  AgentEntity,
  ...GITHUB_ENTITIES,
  AuditEntryEntity,
  BanEntity,
  RoundClockEntity,
  ScheduledActionEntity,
  TeamWebhookEntity,
  WebhookDeliveryEntity,
];
