import { Column, CreateDateColumn, Entity, Index, PrimaryGeneratedColumn } from 'typeorm';
import type { AgentCapabilities } from '@dryft/libs';

/**
 * A GPU (or CPU) box that runs evaluations. Created by an organizer, who sees its `dryft_agent_…`
 * token once; only the token's sha256 is kept. What the agent reports at `agent.ready`
 * (capabilities, slots) is stored so organizers see it even while the agent is offline.
 */
@Entity('agents')
@Index('UQ_agents_token_hash', ['tokenHash'], { unique: true })
export class AgentEntity {
  @PrimaryGeneratedColumn('uuid')
  id!: string;

  @Column({ type: 'text' })
  name!: string;

  @Column({ name: 'token_hash', type: 'text' })
  tokenHash!: string;

  /** `dryft_agent_` plus four characters: enough to recognise a token in a list, useless to an attacker. */
  @Column({ name: 'token_prefix', type: 'text' })
  tokenPrefix!: string;

  @Column({ type: 'jsonb', nullable: true })
  capabilities!: AgentCapabilities | null;

  /** The slots the agent announced: index and the GPU ids each one owns. */
  @Column({ type: 'jsonb', default: () => "'[]'" })
  slots!: { index: number; gpus: string[] }[];

  /** A draining agent finishes what it runs and is sent nothing new. */
  @Column({ type: 'boolean', default: false })
  draining!: boolean;

  /** True between a socket's `agent.ready` and its disconnect (any replica). */
  @Column({ type: 'boolean', default: false })
  connected!: boolean;

  @Column({ name: 'last_heartbeat_at', type: 'timestamptz', nullable: true })
  lastHeartbeatAt!: Date | null;

  @Column({ name: 'created_by', type: 'uuid', nullable: true })
  createdBy!: string | null;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt!: Date;

  @Column({ name: 'revoked_at', type: 'timestamptz', nullable: true })
  revokedAt!: Date | null;
}
