import { Column, CreateDateColumn, Entity, Index, PrimaryGeneratedColumn } from 'typeorm';

/** Extra runs of one daily-limit bucket an organizer granted a team or user for one UTC day. */
@Entity('quota_grants')
@Index('IDX_quota_grants_holder_day', ['benchmarkId', 'holderId', 'bucket', 'day'])
export class QuotaGrantEntity {
  @PrimaryGeneratedColumn('uuid')
  id!: string;

  @Column({ name: 'benchmark_id', type: 'text' })
  benchmarkId!: string;

  /** A team id, or a user id on benchmarks that rank users: what a run's `quota_holder` holds. */
  @Column({ name: 'holder_id', type: 'text' })
  holderId!: string;

  @Column({ name: 'holder_kind', type: 'text' })
  holderKind!: 'team' | 'user';

  @Column({ type: 'text' })
  bucket!: string;

  @Column({ type: 'date' })
  day!: string;

  @Column({ name: 'extra_runs', type: 'integer' })
  extraRuns!: number;

  @Column({ type: 'text' })
  reason!: string;

  @Column({ name: 'granted_by', type: 'uuid' })
  grantedBy!: string;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt!: Date;
}
