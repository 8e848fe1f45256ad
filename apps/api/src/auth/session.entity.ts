import { Column, CreateDateColumn, Entity, Index, PrimaryColumn } from 'typeorm';

/** A browser session. The cookie holds a random value; only its sha256 is stored here. */
@Entity('sessions')
export class SessionEntity {
  @PrimaryColumn({ name: 'id_hash', type: 'text' })
  idHash!: string;

  @Index()
  @Column({ name: 'user_id', type: 'uuid' })
  userId!: string;

  @Column({ name: 'active_team_id', type: 'uuid', nullable: true })
  activeTeamId!: string | null;

  /** Sent back by the browser in `X-CSRF-Token` for every state-changing request. */
  @Column({ name: 'csrf_token', type: 'text' })
  csrfToken!: string;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt!: Date;

  @Column({ name: 'expires_at', type: 'timestamptz' })
  expiresAt!: Date;
}
