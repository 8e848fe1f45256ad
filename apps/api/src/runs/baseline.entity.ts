import { Column, Entity, PrimaryColumn, UpdateDateColumn } from 'typeorm';
import type { BaselineFigures } from '@dryft/libs';

/** Baseline timings per benchmark, hardware model and rules version (score 100 is measured, not assumed). */
@Entity('baselines')
export class BaselineEntity {
  @PrimaryColumn({ name: 'benchmark_id', type: 'text' })
  benchmarkId!: string;

  @PrimaryColumn({ type: 'text' })
  hardware!: string;

  @PrimaryColumn({ name: 'rules_version', type: 'integer' })
  rulesVersion!: number;

  @Column({ type: 'jsonb' })
  figures!: BaselineFigures;

  @UpdateDateColumn({ name: 'measured_at', type: 'timestamptz' })
  measuredAt!: Date;
}
