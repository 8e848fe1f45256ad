import { Column, CreateDateColumn, Entity, PrimaryGeneratedColumn } from 'typeorm';

@Entity('teams')
export class TeamEntity {
  @PrimaryGeneratedColumn('uuid')
  id!: string;

  @Column({ type: 'text' })
  name!: string;

  /** For public team pages: `/teams/<slug>`. */
  @Column({ type: 'text', unique: true })
  slug!: string;

  @Column({ name: 'invite_code', type: 'text', unique: true })
  inviteCode!: string;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt!: Date;
}
