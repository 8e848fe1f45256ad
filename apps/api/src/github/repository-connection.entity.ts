import { Column, CreateDateColumn, Entity, Index, PrimaryGeneratedColumn, UpdateDateColumn } from 'typeorm';

export type Evaluation = 'public' | 'official';

/** A repository connected to a team: a GitHub repository connects to at most one team. */
@Entity('repository_connections')
@Index('IDX_repository_connections_team', ['teamId', 'createdAt'])
export class RepositoryConnectionEntity {
  @PrimaryGeneratedColumn('uuid')
  id!: string;

  @Column({ name: 'team_id', type: 'uuid' })
  teamId!: string;

  @Index('IDX_repository_connections_installation')
  @Column({ name: 'installation_id', type: 'bigint' })
  installationId!: string;

  /** GitHub's numeric repository id: stable across renames and transfers. */
  @Index('UQ_repository_connections_repo', { unique: true })
  @Column({ name: 'github_repository_id', type: 'bigint' })
  githubRepositoryId!: string;

  /** owner/name as last seen (pushes refresh it after a rename). */
  @Column({ name: 'full_name', type: 'text' })
  fullName!: string;

  @Column({ name: 'default_branch', type: 'text' })
  defaultBranch!: string;

  @Column({ name: 'engine_folder', type: 'text' })
  engineFolder!: string;

  @Column({ name: 'benchmark_id', type: 'text' })
  benchmarkId!: string;

  @Column({ name: 'auto_run', type: 'boolean', default: true })
  autoRun!: boolean;

  @Column({ type: 'text', default: 'public' })
  evaluation!: Evaluation;

  /** Pushes act as this member (the submission's and run's creator). */
  @Column({ name: 'connected_by', type: 'uuid' })
  connectedBy!: string;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt!: Date;

  @UpdateDateColumn({ name: 'updated_at', type: 'timestamptz' })
  updatedAt!: Date;
}
