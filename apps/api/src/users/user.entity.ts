import { Column, CreateDateColumn, Entity, PrimaryGeneratedColumn } from 'typeorm';

@Entity('users')
export class UserEntity {
  @PrimaryGeneratedColumn('uuid')
  id!: string;

  /** GitHub's numeric user id; null for dev sign-in users. */
  @Column({ name: 'github_id', type: 'bigint', nullable: true, unique: true })
  githubId!: string | null;

  @Column({ type: 'text', unique: true })
  login!: string;

  @Column({ type: 'text', nullable: true })
  name!: string | null;

  @Column({ name: 'avatar_url', type: 'text', nullable: true })
  avatarUrl!: string | null;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt!: Date;
}
