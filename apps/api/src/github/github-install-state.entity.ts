import { Column, CreateDateColumn, Entity, PrimaryColumn } from 'typeorm';

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
