import { Column, Entity, PrimaryColumn, UpdateDateColumn } from 'typeorm';
import type { CalibrationK, PooledWorkload } from '@dryft/libs';

/**
 * The pooled K of one (benchmark, hardware key, rules version): recomputed from its
 * calibration_runs whenever one is added (poolCalibration, a seeded bootstrap: the same rows give
 * the same K), so dispatch reads it in one lookup instead of bootstrapping per official run.
 */
@Entity('calibrations')
export class CalibrationEntity {
  @PrimaryColumn({ name: 'benchmark_id', type: 'text' })
  benchmarkId!: string;

  @PrimaryColumn({ type: 'text' })
  hardware!: string;

  @PrimaryColumn({ name: 'rules_version', type: 'integer' })
  rulesVersion!: number;

  /** What official and public specs carry (DecodeSpec.calibration). */
  @Column({ type: 'jsonb' })
  k!: CalibrationK;

  /** Per workload: pooled pairs and the log half-widths behind K's interval (the console shows them). */
  @Column({ type: 'jsonb' })
  detail!: Record<string, PooledWorkload>;

  /** GPU seconds of the pooled runs' pairs. */
  @Column({ type: 'double precision' })
  seconds!: number;

  @UpdateDateColumn({ name: 'updated_at', type: 'timestamptz' })
  updatedAt!: Date;
}
