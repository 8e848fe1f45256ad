import { Column, CreateDateColumn, Entity, Index, PrimaryGeneratedColumn } from 'typeorm';

/** A team API token. Only the sha256 of the value is stored; the value is shown once. */
@Entity('api_tokens')
export class ApiTokenEntity {
  @PrimaryGeneratedColumn('uuid')
  id!: string;

  @Index()
  @Column({ name: 'team_id', type: 'uuid' })
  teamId!: string;

  @Column({ type: 'text' })
  name!: string;

  @Column({ name: 'token_hash', type: 'text', unique: true })
  tokenHash!: string;

  /** `dryft_pat_` and the first characters, enough to recognise a token in a list. */
  @Column({ type: 'text' })
  prefix!: string;

  @Column({ name: 'created_by', type: 'uuid' })
  createdBy!: string;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt!: Date;

  @Column({ name: 'last_used_at', type: 'timestamptz', nullable: true })
  lastUsedAt!: Date | null;

  @Column({ name: 'expires_at', type: 'timestamptz', nullable: true })
  expiresAt!: Date | null;

  @Column({ name: 'revoked_at', type: 'timestamptz', nullable: true })
  revokedAt!: Date | null;

  /** Null: revoked by an owner or admin. `creator_left`: its creator left or was removed (for good). */
  @Column({ name: 'revoked_reason', type: 'text', nullable: true })
  revokedReason!: 'creator_left' | null;
}
