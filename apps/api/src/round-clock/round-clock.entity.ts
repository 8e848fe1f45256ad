import { Column, Entity, PrimaryColumn, UpdateDateColumn } from 'typeorm';

/**
 * The displayed round of a benchmark: a name, a start and an end. It is a clock only: it never
 * opens or closes anything (scheduled actions do, when an organizer asks for them).
 */
@Entity('round_clocks')
export class RoundClockEntity {
  @PrimaryColumn({ name: 'benchmark_id', type: 'text' })
  benchmarkId!: string;

  @Column({ type: 'text' })
  name!: string;

  @Column({ name: 'starts_at', type: 'timestamptz' })
  startsAt!: Date;

  @Column({ name: 'ends_at', type: 'timestamptz' })
  endsAt!: Date;

  @Column({ name: 'updated_by', type: 'uuid' })
  updatedBy!: string;

  @UpdateDateColumn({ name: 'updated_at', type: 'timestamptz' })
  updatedAt!: Date;
}
