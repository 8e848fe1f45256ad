import {
  Column,
  CreateDateColumn,
  Entity,
  Index,
  PrimaryColumn,
  PrimaryGeneratedColumn,
  UpdateDateColumn,
} from 'typeorm';

/**
 * A GitHub App installation, owned by the one team whose owner or admin installed it. Binding is
 * exclusive (unique installation id): another team can never reach its repositories.
 */
@Entity('github_installations')
export class GithubInstallationEntity {
  /** GitHub's numeric installation id (bigint: kept as a string). */
  @PrimaryColumn({ name: 'installation_id', type: 'bigint' })
  installationId!: string;

  @Index('IDX_github_installations_team')
  @Column({ name: 'team_id', type: 'uuid' })
  teamId!: string;

  @Column({ name: 'account_login', type: 'text' })
  accountLogin!: string;

  @Column({ name: 'account_type', type: 'text' })
  accountType!: string;

  @Column({ name: 'installed_by', type: 'uuid' })
  installedBy!: string;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt!: Date;
}

/** The `state` of one install flow: who started it for which team; used once, then spent. */
@Entity('github_install_states')
export class GithubInstallStateEntity {
  /** sha256 of the state value: the value itself only ever lives in the redirect URL. */
  @PrimaryColumn({ name: 'state_hash', type: 'text' })
  stateHash!: string;

  @Column({ name: 'team_id', type: 'uuid' })
  teamId!: string;

  @Column({ name: 'user_id', type: 'uuid' })
  userId!: string;

  @Column({ name: 'expires_at', type: 'timestamptz' })
  expiresAt!: Date;

  @Column({ name: 'used_at', type: 'timestamptz', nullable: true })
  usedAt!: Date | null;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt!: Date;
}

export type Evaluation = 'public' | 'official';

/** A repository connected to a team: a GitHub repository connects to at most one team. */
@Entity('repository_connections')
@Index('IDX_repository_connections_team', ['teamId', 'createdAt'])
export class RepositoryConnectionEntity {
  @PrimaryGeneratedColumn('uuid')
  id!: string;

  @Column({ name: 'team_id', type: 'uuid' })
  teamId!: string;

  @Index('IDX_repository_connections_installation')
  @Column({ name: 'installation_id', type: 'bigint' })
  installationId!: string;

  /** GitHub's numeric repository id: stable across renames and transfers. */
  @Index('UQ_repository_connections_repo', { unique: true })
  @Column({ name: 'github_repository_id', type: 'bigint' })
  githubRepositoryId!: string;

  /** owner/name as last seen (pushes refresh it after a rename). */
  @Column({ name: 'full_name', type: 'text' })
  fullName!: string;

  @Column({ name: 'default_branch', type: 'text' })
  defaultBranch!: string;

  @Column({ name: 'engine_folder', type: 'text' })
  engineFolder!: string;

  @Column({ name: 'benchmark_id', type: 'text' })
  benchmarkId!: string;

  @Column({ name: 'auto_run', type: 'boolean', default: true })
  autoRun!: boolean;

  @Column({ type: 'text', default: 'public' })
  evaluation!: Evaluation;

  /** Pushes act as this member (the submission's and run's creator). */
  @Column({ name: 'connected_by', type: 'uuid' })
  connectedBy!: string;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt!: Date;

  @UpdateDateColumn({ name: 'updated_at', type: 'timestamptz' })
  updatedAt!: Date;
}

export type DeliveryStatus = 'rejected' | 'queued' | 'processing' | 'succeeded' | 'failed' | 'ignored';

/**
 * One webhook delivery (or one "Run now"), kept for "Check delivery": what came, what we did and why.
 * A delivery with a bad signature is recorded as `rejected` without its payload.
 */
@Entity('github_deliveries')
@Index('IDX_github_deliveries_connection', ['connectionId', 'receivedAt'])
export class GithubDeliveryEntity {
  @PrimaryGeneratedColumn('uuid')
  id!: string;

  /**
   * X-GitHub-Delivery of an accepted (signed) delivery: the deduplication key. Null for rejected
   * deliveries (an unsigned request must not block the real one) and for "Run now".
   */
  @Index('UQ_github_deliveries_guid', { unique: true })
  @Column({ type: 'text', nullable: true })
  guid!: string | null;

  /** X-GitHub-Delivery as sent, also for rejected deliveries. */
  @Column({ name: 'github_delivery_id', type: 'text', nullable: true })
  githubDeliveryId!: string | null;

  /** push, installation, installation_repositories, ping, … or run_now. */
  @Column({ type: 'text' })
  event!: string;

  @Column({ type: 'text', nullable: true })
  action!: string | null;

  @Column({ type: 'text' })
  status!: DeliveryStatus;

  /** Why it failed or was ignored, in words a team can act on. */
  @Column({ type: 'text', nullable: true })
  reason!: string | null;

  /** The archive rule a refused engine folder broke (entrypoint, extensions, …). */
  @Column({ name: 'failure_code', type: 'text', nullable: true })
  failureCode!: string | null;

  @Column({ name: 'team_id', type: 'uuid', nullable: true })
  teamId!: string | null;

  @Column({ name: 'connection_id', type: 'uuid', nullable: true })
  connectionId!: string | null;

  @Column({ name: 'installation_id', type: 'bigint', nullable: true })
  installationId!: string | null;

  @Column({ name: 'github_repository_id', type: 'bigint', nullable: true })
  githubRepositoryId!: string | null;

  @Column({ name: 'repository_full_name', type: 'text', nullable: true })
  repositoryFullName!: string | null;

  @Column({ type: 'text', nullable: true })
  ref!: string | null;

  @Column({ name: 'commit_sha', type: 'text', nullable: true })
  commitSha!: string | null;

  /** The member a "Run now" acts as. */
  @Column({ name: 'requested_by', type: 'uuid', nullable: true })
  requestedBy!: string | null;

  @Column({ name: 'submission_id', type: 'uuid', nullable: true })
  submissionId!: string | null;

  @Column({ name: 'run_id', type: 'uuid', nullable: true })
  runId!: string | null;

  /** Processing attempts (a redelivery adds one). */
  @Column({ type: 'integer', default: 0 })
  attempts!: number;

  /** The verified payload, kept so a failed delivery can be processed again. */
  @Column({ type: 'jsonb', nullable: true })
  payload!: object | null;

  @CreateDateColumn({ name: 'received_at', type: 'timestamptz' })
  receivedAt!: Date;

  @Column({ name: 'processed_at', type: 'timestamptz', nullable: true })
  processedAt!: Date | null;
}

export const GITHUB_ENTITIES = [
  GithubInstallationEntity,
  GithubInstallStateEntity,
  RepositoryConnectionEntity,
  GithubDeliveryEntity,
];
