import { Column, CreateDateColumn, Entity, Index, PrimaryGeneratedColumn } from 'typeorm';

/**
 * A team's outgoing webhook. The secret signs every delivery (HMAC-SHA256, X-Hub-Signature-256), so
 * the hub keeps it; it is shown to the owner once, at creation.
 */
@Entity('team_webhooks')
@Index('IDX_team_webhooks_team', ['teamId'])
export class TeamWebhookEntity {
  @PrimaryGeneratedColumn('uuid')
  id!: string;

  @Column({ name: 'team_id', type: 'uuid' })
  teamId!: string;

  @Column({ type: 'text' })
  url!: string;

  @Column({ type: 'text' })
  secret!: string;

  @Column({ type: 'text', array: true })
  events!: string[];

  @Column({ name: 'created_by', type: 'uuid' })
  createdBy!: string;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt!: Date;

  @Column({ name: 'deleted_at', type: 'timestamptz', nullable: true })
  deletedAt!: Date | null;
}

/** One event for one webhook; retried with backoff until it succeeds or runs out of attempts. */
@Entity('webhook_deliveries')
@Index('IDX_webhook_deliveries_hook', ['webhookId', 'createdAt'])
export class WebhookDeliveryEntity {
  @PrimaryGeneratedColumn('uuid')
  id!: string;

  @Column({ name: 'webhook_id', type: 'uuid' })
  webhookId!: string;

  @Column({ name: 'team_id', type: 'uuid' })
  teamId!: string;

  @Column({ type: 'text' })
  event!: string;

  @Column({ name: 'run_id', type: 'uuid', nullable: true })
  runId!: string | null;

  /** The exact JSON body posted (the signature is over these bytes). */
  @Column({ type: 'text' })
  body!: string;

  /** 'pending' | 'succeeded' | 'failed'. */
  @Column({ type: 'text', default: 'pending' })
  status!: string;

  @Column({ type: 'integer', default: 0 })
  attempts!: number;

  @Column({ name: 'last_status_code', type: 'integer', nullable: true })
  lastStatusCode!: number | null;

  @Column({ name: 'last_error', type: 'text', nullable: true })
  lastError!: string | null;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt!: Date;

  @Column({ name: 'delivered_at', type: 'timestamptz', nullable: true })
  deliveredAt!: Date | null;
}
