import { Column, Entity, PrimaryColumn, UpdateDateColumn } from 'typeorm';

/**
 * What organizers change at run time over a benchmark's definition file: open/closed, the whole-run
 * time limit and the rules version. Seeded from the file the first time the benchmark is seen.
 */
@Entity('benchmark_settings')
export class BenchmarkSettingsEntity {
  @PrimaryColumn({ name: 'benchmark_id', type: 'text' })
  benchmarkId!: string;

  @Column({ name: 'submissions_open', type: 'boolean' })
  submissionsOpen!: boolean;

  @Column({ name: 'evaluations_open', type: 'boolean' })
  evaluationsOpen!: boolean;

  @Column({ name: 'run_time_limit_seconds', type: 'integer' })
  runTimeLimitSeconds!: number;

  @Column({ name: 'rules_version', type: 'integer' })
  rulesVersion!: number;

  @Column({ name: 'rules_changed_reason', type: 'text', nullable: true })
  rulesChangedReason!: string | null;

  @Column({ name: 'rules_changed_at', type: 'timestamptz', nullable: true })
  rulesChangedAt!: Date | null;

  /** Shown to participants, e.g. when submissions reopen. */
  @Column({ type: 'text', nullable: true })
  announcement!: string | null;

  @UpdateDateColumn({ name: 'updated_at', type: 'timestamptz' })
  updatedAt!: Date;
}
