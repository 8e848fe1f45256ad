import { Column, CreateDateColumn, Entity, Index, PrimaryGeneratedColumn } from 'typeorm';

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

  /**
   * A close: when the `round.closing` notice was claimed (once across replicas and restarts); null
   * until then, and again after the close was moved to another time.
   */
  @Column({ name: 'notice_sent_at', type: 'timestamptz', nullable: true })
  noticeSentAt!: Date | null;
}
