import { Column, Entity, PrimaryColumn } from 'typeorm';

@Entity('run_checks')
export class RunCheckEntity {
  @PrimaryColumn({ name: 'run_id', type: 'uuid' })
  runId!: string;

  @PrimaryColumn({ type: 'text' })
  name!: string;

  @Column({ type: 'boolean' })
  passed!: boolean;

  @Column({ type: 'text' })
  detail!: string;
}
