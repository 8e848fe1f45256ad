import { Column, CreateDateColumn, Entity, Index, PrimaryGeneratedColumn } from 'typeorm';

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
