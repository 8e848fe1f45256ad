import { Column, Entity, PrimaryColumn } from 'typeorm';

/** Training progress (a point on the loss curve). */
@Entity('run_metrics')
export class RunMetricEntity {
  @PrimaryColumn({ name: 'run_id', type: 'uuid' })
  runId!: string;

  @PrimaryColumn({ type: 'text' })
  name!: string;

  @PrimaryColumn({ type: 'integer' })
  step!: number;

  @Column({ type: 'double precision' })
  value!: number;

  @Column({ name: 'elapsed_ms', type: 'double precision' })
  elapsedMs!: number;
}
