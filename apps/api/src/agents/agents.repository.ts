import { Injectable } from '@nestjs/common';
import { DataSource, IsNull } from 'typeorm';
import { TransactionalRepository } from '../common/transactional-repository';
import { SubmissionEntity } from '../submissions/submission.entity';
import { AgentEntity } from './agent.entity';

interface AgentIdRow {
  id: string;
}

/** The agents table (the runs table's queries live in runs/run-queue.ts). */
@Injectable()
export class AgentsRepository extends TransactionalRepository {
  constructor(dataSource: DataSource) {
    super(dataSource);
  }

  insert(row: Partial<AgentEntity>): Promise<AgentEntity> {
    return this.manager.save(this.manager.create(AgentEntity, row));
  }

  save(agent: AgentEntity): Promise<AgentEntity> {
    return this.manager.save(agent);
  }

  findById(id: string): Promise<AgentEntity | null> {
    return this.manager.findOneBy(AgentEntity, { id });
  }

  findByTokenHash(hash: string): Promise<AgentEntity | null> {
    return this.manager.findOneBy(AgentEntity, { tokenHash: hash });
  }

  findActiveByName(name: string): Promise<AgentEntity | null> {
    return this.manager.findOneBy(AgentEntity, { name, revokedAt: IsNull() });
  }

  list(): Promise<AgentEntity[]> {
    return this.manager.find(AgentEntity, { order: { createdAt: 'ASC' } });
  }

  async update(id: string, set: Partial<AgentEntity>): Promise<void> {
    await this.manager.update(AgentEntity, { id }, set);
  }

  findSubmission(id: string): Promise<SubmissionEntity | null> {
    return this.manager.findOneBy(SubmissionEntity, { id });
  }

  async unavailableAgentIds(ids: string[]): Promise<string[]> {
    const rows = await this.manager.query<AgentIdRow[]>(
      `SELECT id FROM agents WHERE id = ANY($1) AND (draining OR revoked_at IS NOT NULL)`,
      [ids],
    );
    return rows.map((r) => r.id);
  }
}
