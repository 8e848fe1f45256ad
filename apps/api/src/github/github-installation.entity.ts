import { Column, CreateDateColumn, Entity, Index, PrimaryColumn } from 'typeorm';

/**
 * A GitHub App installation, owned by the one team whose owner or admin installed it. Binding is
 * exclusive (unique installation id): another team can never reach its repositories.
 */
@Entity('github_installations')
export class GithubInstallationEntity {
  /** GitHub's numeric installation id (bigint: kept as a string). */
  @PrimaryColumn({ name: 'installation_id', type: 'bigint' })
  installationId!: string;

  @Index('IDX_github_installations_team')
  @Column({ name: 'team_id', type: 'uuid' })
  teamId!: string;

  @Column({ name: 'account_login', type: 'text' })
  accountLogin!: string;

  @Column({ name: 'account_type', type: 'text' })
  accountType!: string;

  @Column({ name: 'installed_by', type: 'uuid' })
  installedBy!: string;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt!: Date;
}
