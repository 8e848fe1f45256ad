import { Column, CreateDateColumn, Entity, Index, PrimaryGeneratedColumn, Unique } from 'typeorm';

/** An uploaded (or pushed) engine archive or single file, stored by sha256 in the artifact store. */
@Entity('submissions')
@Unique('UQ_submission_team_benchmark_source_number', ['teamId', 'benchmarkId', 'sourceName', 'number'])
@Index('IDX_submissions_team_created', ['teamId', 'createdAt'])
export class SubmissionEntity {
  @PrimaryGeneratedColumn('uuid')
  id!: string;

  @Column({ name: 'benchmark_id', type: 'text' })
  benchmarkId!: string;

  @Column({ name: 'team_id', type: 'uuid' })
  teamId!: string;

  @Column({ name: 'created_by', type: 'uuid' })
  createdBy!: string;

  @Column({ type: 'text' })
  source!: 'upload' | 'github';

  /** The name before " #N": the repository's name, or the upload's file stem. */
  @Column({ name: 'source_name', type: 'text' })
  sourceName!: string;

  @Column({ type: 'integer' })
  number!: number;

  @Column({ type: 'text' })
  kind!: 'archive' | 'file';

  @Column({ type: 'text' })
  sha256!: string;

  @Column({ name: 'size_bytes', type: 'integer' })
  sizeBytes!: number;

  @Column({ name: 'file_count', type: 'integer' })
  fileCount!: number;

  @Column({ type: 'jsonb' })
  files!: { path: string; size: number }[];

  @Column({ name: 'commit_sha', type: 'text', nullable: true })
  commitSha!: string | null;

  @Column({ name: 'repository_id', type: 'uuid', nullable: true })
  repositoryId!: string | null;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt!: Date;
}
