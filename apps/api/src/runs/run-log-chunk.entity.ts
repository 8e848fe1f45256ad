import { Column, Entity, PrimaryColumn } from 'typeorm';

/**
 * A stored batch of a run's log lines (runs/run-log.ts): chunks of a run never overlap, so the
 * last seq both orders them and keeps a resent batch from being stored twice.
 */
@Entity('run_log_chunks')
export class RunLogChunkEntity {
  @PrimaryColumn({ name: 'run_id', type: 'uuid' })
  runId!: string;

  @PrimaryColumn({ name: 'last_seq', type: 'integer' })
  lastSeq!: number;

  @Column({ name: 'first_seq', type: 'integer' })
  firstSeq!: number;

  @Column({ name: 'line_count', type: 'integer' })
  lineCount!: number;

  /** JSON: `[[seq, ts, stream, text], …]` in seq order. */
  @Column({ type: 'text' })
  lines!: string;
}
