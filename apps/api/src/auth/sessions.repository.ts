import { Injectable } from '@nestjs/common';
import { DataSource, LessThan, Repository } from 'typeorm';
import { SessionEntity } from './session.entity';

@Injectable()
export class SessionsRepository {
  private readonly repo: Repository<SessionEntity>;

  constructor(dataSource: DataSource) {
    this.repo = dataSource.getRepository(SessionEntity);
  }

  create(session: SessionEntity): Promise<SessionEntity> {
    return this.repo.save(this.repo.create(session));
  }

  findByHash(idHash: string): Promise<SessionEntity | null> {
    return this.repo.findOneBy({ idHash });
  }

  async setActiveTeam(idHash: string, teamId: string | null): Promise<void> {
    await this.repo.update({ idHash }, { activeTeamId: teamId });
  }

  /** A member who leaves or is removed: their sessions stop pointing at the team. */
  async clearActiveTeamForUser(userId: string, teamId: string): Promise<void> {
    await this.repo.update({ userId, activeTeamId: teamId }, { activeTeamId: null });
  }

  async delete(idHash: string): Promise<void> {
    await this.repo.delete({ idHash });
  }

  async deleteExpired(now: Date): Promise<void> {
    await this.repo.delete({ expiresAt: LessThan(now) });
  }
}
