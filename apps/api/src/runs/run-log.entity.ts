import { Column, Entity, PrimaryColumn } from 'typeorm';

/** One log line; (run, seq) is both the order and the dedup key. */
@Entity('run_logs')
export class RunLogEntity {
  @PrimaryColumn({ name: 'run_id', type: 'uuid' })
  runId!: string;

  @PrimaryColumn({ type: 'integer' })
  seq!: number;

  @Column({ type: 'bigint' })
  ts!: string;

  @Column({ type: 'text' })
  stream!: 'out' | 'harness' | 'agent' | 'system';

  @Column({ type: 'text' })
  text!: string;
}
