import { Column, CreateDateColumn, Entity, Index, PrimaryColumn } from 'typeorm';

/**
 * One calibration run's contribution to K (a run of mode `calibration` that succeeded and passed
 * the hub's checks): its pairs' ratios per workload on one hardware key under one rules version.
 * The history of a key's calibration, and what its pooled K is computed from.
 */
@Entity('calibration_runs')
@Index('IDX_calibration_runs_key', ['benchmarkId', 'rulesVersion', 'hardware'])
export class CalibrationRunEntity {
  @PrimaryColumn({ name: 'run_id', type: 'uuid' })
  runId!: string;

  @Column({ name: 'benchmark_id', type: 'text' })
  benchmarkId!: string;

  @Column({ name: 'rules_version', type: 'integer' })
  rulesVersion!: number;

  @Column({ type: 'text' })
  hardware!: string;

  @Column({ name: 'agent_name', type: 'text', nullable: true })
  agentName!: string | null;

  /** Per workload, each pair's baseline totalMs ÷ reference totalMs. */
  @Column({ type: 'jsonb' })
  workloads!: Record<string, { ratios: number[] }>;

  /** Pairs per workload, as the harness reported them. */
  @Column({ type: 'integer' })
  pairs!: number;

  /** GPU seconds the run spent on its pairs. */
  @Column({ type: 'double precision' })
  seconds!: number;

  /** The run's own K half-width (percent), as its harness reported it. */
  @Column({ name: 'half_width_pct', type: 'double precision' })
  halfWidthPct!: number;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt!: Date;
}
