import { Column, Entity, PrimaryColumn } from 'typeorm';

@Entity('run_samples')
export class RunSampleEntity {
  @PrimaryColumn({ name: 'run_id', type: 'uuid' })
  runId!: string;

  @PrimaryColumn({ type: 'text' })
  workload!: string;

  @PrimaryColumn({ type: 'boolean' })
  warmup!: boolean;

  @PrimaryColumn({ name: 'idx', type: 'integer' })
  index!: number;

  @Column({ name: 'ttft_ms', type: 'double precision', nullable: true })
  ttftMs!: number | null;

  @Column({ name: 'tpot_ms', type: 'double precision', nullable: true })
  tpotMs!: number | null;

  @Column({ type: 'double precision', nullable: true })
  tps!: number | null;

  @Column({ name: 'total_ms', type: 'double precision' })
  totalMs!: number;

  @Column({ type: 'integer' })
  tokens!: number;

  @Column({ type: 'jsonb', nullable: true })
  metrics!: Record<string, number> | null;
}
