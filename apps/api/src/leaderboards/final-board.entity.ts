import { Column, Entity, PrimaryColumn } from 'typeorm';
import type { LeaderboardView } from '@dryft/libs';

/**
 * A benchmark's published verified final board, frozen as published (`GET
 * /api/leaderboards/:id?board=final`). The live board is computed from runs and stays as it is.
 */
@Entity('final_boards')
export class FinalBoardEntity {
  @PrimaryColumn({ name: 'benchmark_id', type: 'text' })
  benchmarkId!: string;

  @Column({ type: 'jsonb' })
  board!: LeaderboardView;

  @Column({ name: 'batch_id', type: 'uuid' })
  batchId!: string;

  @Column({ name: 'published_at', type: 'timestamptz' })
  publishedAt!: Date;
}
