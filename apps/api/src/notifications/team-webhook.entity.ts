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
