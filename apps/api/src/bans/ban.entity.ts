import { Check, Column, CreateDateColumn, Entity, Index, PrimaryGeneratedColumn } from 'typeorm';

/**
 * A ban of a user or a team, on one benchmark or hub-wide (benchmark null). In force while not
 * lifted and before its end. Lifting keeps the row (the history stays readable).
 */
@Entity('bans')
@Check('CHK_bans_one_subject', '(user_id IS NULL) <> (team_id IS NULL)')
@Index('IDX_bans_user', ['userId'])
@Index('IDX_bans_team', ['teamId'])
export class BanEntity {
  @PrimaryGeneratedColumn('uuid')
  id!: string;

  @Column({ name: 'user_id', type: 'uuid', nullable: true })
  userId!: string | null;

  @Column({ name: 'team_id', type: 'uuid', nullable: true })
  teamId!: string | null;

  @Column({ name: 'benchmark_id', type: 'text', nullable: true })
  benchmarkId!: string | null;

  @Column({ type: 'text' })
  reason!: string;

  @Column({ name: 'ends_at', type: 'timestamptz', nullable: true })
  endsAt!: Date | null;

  @Column({ name: 'created_by', type: 'uuid' })
  createdBy!: string;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt!: Date;

  @Column({ name: 'lifted_at', type: 'timestamptz', nullable: true })
  liftedAt!: Date | null;

  @Column({ name: 'lifted_by', type: 'uuid', nullable: true })
  liftedBy!: string | null;

  @Column({ name: 'lift_reason', type: 'text', nullable: true })
  liftReason!: string | null;
}
