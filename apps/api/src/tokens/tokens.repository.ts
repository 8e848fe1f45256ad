import { Injectable } from '@nestjs/common';
import { DataSource, Repository } from 'typeorm';
import { ApiTokenEntity } from './api-token.entity';

/** The hub's own tag (hub_identity has one row). */
interface HubTagRow {
  tag: string;
}

@Injectable()
export class TokensRepository {
  private readonly repo: Repository<ApiTokenEntity>;

  constructor(dataSource: DataSource) {
    this.repo = dataSource.getRepository(ApiTokenEntity);
  }

  create(token: Partial<ApiTokenEntity>): Promise<ApiTokenEntity> {
    return this.repo.save(this.repo.create(token));
  }

  /** This hub's tag (the hub_identity row made with the database). */
  async hubTag(): Promise<string> {
    const rows = await this.repo.manager.query<HubTagRow[]>('SELECT tag FROM hub_identity LIMIT 1');
    if (!rows[0]) throw new Error('hub_identity is empty: the database was not migrated');
    return rows[0].tag;
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
