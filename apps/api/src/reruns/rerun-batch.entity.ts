import { Column, CreateDateColumn, Entity, Index, PrimaryGeneratedColumn } from 'typeorm';

/**
 * One organizer request for re-runs: a single run again (`single`), every eligible best run of a
 * benchmark again (`bulk`), or the verified final board's top k best runs m times each (`final`).
 * Its runs carry `rerun_batch_id`; progress is read from them. One final board per benchmark and
 * rules version (a partial unique index), so a scheduled close and a button cannot start two.
 */
@Entity('rerun_batches')
@Index('IDX_rerun_batches_one_final', ['benchmarkId', 'rulesVersion'], {
  unique: true,
  where: "kind = 'final'",
})
@Index('IDX_rerun_batches_benchmark_created', ['benchmarkId', 'createdAt'])
export class RerunBatchEntity {
  @PrimaryGeneratedColumn('uuid')
  id!: string;

  @Column({ name: 'benchmark_id', type: 'text' })
  benchmarkId!: string;

  @Column({ type: 'text' })
  kind!: 'single' | 'bulk' | 'final';

  @Column({ type: 'text' })
  reason!: string;

  @Column({ name: 'created_by', type: 'uuid' })
  createdBy!: string;

  @Column({ name: 'created_by_login', type: 'text' })
  createdByLogin!: string;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt!: Date;

  @Column({ name: 'rules_version', type: 'integer' })
  rulesVersion!: number;

  @Column({ name: 'replay_prompts', type: 'boolean', default: false })
  replayPrompts!: boolean;

  /** Final boards: the holders verified and the re-runs of each. */
  @Column({ name: 'top_k', type: 'integer', nullable: true })
  topK!: number | null;

  @Column({ name: 'reruns_per_run', type: 'integer', nullable: true })
  rerunsPerRun!: number | null;

  @Column({ name: 'published_at', type: 'timestamptz', nullable: true })
  publishedAt!: Date | null;

  @Column({ name: 'published_by_login', type: 'text', nullable: true })
  publishedByLogin!: string | null;
}
