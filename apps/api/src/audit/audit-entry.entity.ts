import { Column, CreateDateColumn, Entity, Index, PrimaryGeneratedColumn } from 'typeorm';

/**
 * One organizer action: who, when, what, to what, and why. Append-only: the application has no
 * update or delete path, and a database trigger refuses UPDATE, DELETE and TRUNCATE on the table.
 */
@Entity('audit_log')
@Index('IDX_audit_log_at', ['at'])
export class AuditEntryEntity {
  @PrimaryGeneratedColumn('uuid')
  id!: string;

  @CreateDateColumn({ type: 'timestamptz' })
  at!: Date;

  @Column({ name: 'actor_id', type: 'uuid' })
  actorId!: string;

  /** The login at the time of the action (a later rename does not rewrite history). */
  @Column({ name: 'actor_login', type: 'text' })
  actorLogin!: string;

  @Column({ type: 'text' })
  action!: string;

  @Column({ name: 'target_kind', type: 'text' })
  targetKind!: string;

  @Column({ name: 'target_id', type: 'text' })
  targetId!: string;

  @Column({ name: 'benchmark_id', type: 'text', nullable: true })
  benchmarkId!: string | null;

  @Column({ type: 'text', nullable: true })
  reason!: string | null;

  @Column({ type: 'jsonb', default: () => "'{}'" })
  details!: Record<string, unknown>;
}
