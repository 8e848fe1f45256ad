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
 * The displayed round of a benchmark: a name, a start and an end. It is a clock only: it never
 * opens or closes anything (scheduled actions do, when an organizer asks for them).
 */
@Entity('round_clocks')
export class RoundClockEntity {
  @PrimaryColumn({ name: 'benchmark_id', type: 'text' })
  benchmarkId!: string;

  @Column({ type: 'text' })
  name!: string;

  @Column({ name: 'starts_at', type: 'timestamptz' })
  startsAt!: Date;

  @Column({ name: 'ends_at', type: 'timestamptz' })
  endsAt!: Date;

  @Column({ name: 'updated_by', type: 'uuid' })
  updatedBy!: string;

  @UpdateDateColumn({ name: 'updated_at', type: 'timestamptz' })
  updatedAt!: Date;
}

/** An open or close an organizer scheduled for a time; claimed once by whichever replica is first. */
@Entity('scheduled_actions')
@Index('IDX_scheduled_actions_due', ['status', 'runAt'])
export class ScheduledActionEntity {
  @PrimaryGeneratedColumn('uuid')
  id!: string;

  @Column({ name: 'benchmark_id', type: 'text' })
  benchmarkId!: string;

  /** 'open' | 'close'. */
  @Column({ type: 'text' })
  action!: string;

  /** 'submissions' | 'evaluations' | 'both'. */
  @Column({ type: 'text' })
  target!: string;

  @Column({ name: 'run_at', type: 'timestamptz' })
  runAt!: Date;

  @Column({ type: 'text', nullable: true })
  reason!: string | null;

  @Column({ name: 'created_by', type: 'uuid' })
  createdBy!: string;

  @Column({ name: 'created_by_login', type: 'text' })
  createdByLogin!: string;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt!: Date;

  /** 'pending' | 'running' | 'done' | 'canceled' | 'failed'. */
  @Column({ type: 'text', default: 'pending' })
  status!: string;

  @Column({ name: 'finished_at', type: 'timestamptz', nullable: true })
  finishedAt!: Date | null;

  @Column({ type: 'text', nullable: true })
  outcome!: string | null;
}
