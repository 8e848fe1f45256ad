import { Injectable } from '@nestjs/common';
import { DataSource, Repository } from 'typeorm';
import { ApiTokenEntity } from './api-token.entity';

@Injectable()
export class TokensRepository {
  private readonly repo: Repository<ApiTokenEntity>;

  constructor(dataSource: DataSource) {
    this.repo = dataSource.getRepository(ApiTokenEntity);
  }

  create(token: Partial<ApiTokenEntity>): Promise<ApiTokenEntity> {
    return this.repo.save(this.repo.create(token));
  }

  findByHash(tokenHash: string): Promise<ApiTokenEntity | null> {
    return this.repo.findOneBy({ tokenHash });
  }

  findInTeam(teamId: string, id: string): Promise<ApiTokenEntity | null> {
    return this.repo.findOneBy({ teamId, id });
  }

  listForTeam(teamId: string): Promise<ApiTokenEntity[]> {
    return this.repo.find({ where: { teamId }, order: { createdAt: 'DESC' } });
  }

  async revoke(id: string, at: Date): Promise<void> {
    await this.repo.update({ id }, { revokedAt: at });
  }

  /** Last use is informative only: written at most once a minute per token. */
  async touch(id: string, at: Date): Promise<void> {
    await this.repo
      .createQueryBuilder()
      .update()
      .set({ lastUsedAt: at })
      .where('id = :id AND (last_used_at IS NULL OR last_used_at < :cutoff)', {
        id,
        cutoff: new Date(at.getTime() - 60_000),
      })
      .execute();
  }
}
