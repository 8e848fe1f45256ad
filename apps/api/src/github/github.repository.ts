import { Injectable } from '@nestjs/common';
import { DataSource, In, Not } from 'typeorm';
import { TransactionalRepository } from '../common/transactional-repository';
import { returned } from '../database/returned-rows';
import { GithubDeliveryEntity } from './github-delivery.entity';
import { GithubInstallStateEntity } from './github-install-state.entity';
import { GithubInstallationEntity } from './github-installation.entity';
import { RepositoryConnectionEntity } from './repository-connection.entity';

/** A spent install state: who started the install flow, for which team. */
export type SpentStateRow = Pick<GithubInstallStateEntity, 'stateHash' | 'teamId' | 'userId'>;

interface DeliveryIdRow {
  id: string;
}

/** How long a "Run now" or job may hold a delivery before another worker may take it over. */
const STALE_PROCESSING = "interval '10 minutes'";

@Injectable()
export class GithubRepository extends TransactionalRepository {
  constructor(dataSource: DataSource) {
    super(dataSource);
  }

  // Install states ------------------------------------------------------------------------------

  async saveState(
    row: Pick<GithubInstallStateEntity, 'stateHash' | 'teamId' | 'userId' | 'expiresAt'>,
  ): Promise<void> {
    await this.manager.insert(GithubInstallStateEntity, { ...row, usedAt: null });
  }

  /** Spends a state: one conditional UPDATE, so two callbacks with the same state cannot both win. */
  async spendState(stateHash: string, now: Date): Promise<SpentStateRow | null> {
    const rows = await this.manager.query<unknown>(
      `UPDATE github_install_states SET used_at = $2 WHERE state_hash = $1 AND used_at IS NULL AND expires_at > $2
       RETURNING state_hash AS "stateHash", team_id AS "teamId", user_id AS "userId"`,
      [stateHash, now],
    );
    return returned<SpentStateRow>(rows)[0] ?? null;
  }

  findState(stateHash: string): Promise<GithubInstallStateEntity | null> {
    return this.manager.findOneBy(GithubInstallStateEntity, { stateHash });
  }

  // Installations --------------------------------------------------------------------------------

  findInstallation(installationId: string): Promise<GithubInstallationEntity | null> {
    return this.manager.findOneBy(GithubInstallationEntity, { installationId });
  }

  listInstallations(teamId: string): Promise<GithubInstallationEntity[]> {
    return this.manager.find(GithubInstallationEntity, { where: { teamId }, order: { createdAt: 'ASC' } });
  }

  /** Binds an unbound installation; returns the row as it is now (possibly another team's). */
  async bindInstallation(
    row: Omit<GithubInstallationEntity, 'createdAt'>,
  ): Promise<GithubInstallationEntity> {
    await this.manager
      .createQueryBuilder()
      .insert()
      .into(GithubInstallationEntity)
      .values(row)
      .orIgnore()
      .execute();
    return (await this.findInstallation(row.installationId))!;
  }

  async deleteInstallation(installationId: string): Promise<void> {
    await this.manager.delete(GithubInstallationEntity, { installationId });
  }

  // Connections ----------------------------------------------------------------------------------

  findConnection(id: string): Promise<RepositoryConnectionEntity | null> {
    return this.manager.findOneBy(RepositoryConnectionEntity, { id });
  }

  findConnectionByRepository(githubRepositoryId: string): Promise<RepositoryConnectionEntity | null> {
    return this.manager.findOneBy(RepositoryConnectionEntity, { githubRepositoryId });
  }

  listConnections(teamId: string): Promise<RepositoryConnectionEntity[]> {
    return this.manager.find(RepositoryConnectionEntity, { where: { teamId }, order: { createdAt: 'ASC' } });
  }

  listConnectionsOfInstallation(installationId: string): Promise<RepositoryConnectionEntity[]> {
    return this.manager.find(RepositoryConnectionEntity, { where: { installationId } });
  }

  /** Inserts unless the repository is connected already; null means someone holds it. */
  async insertConnection(
    row: Omit<RepositoryConnectionEntity, 'id' | 'createdAt' | 'updatedAt'>,
  ): Promise<RepositoryConnectionEntity | null> {
    const result = await this.manager
      .createQueryBuilder()
      .insert()
      .into(RepositoryConnectionEntity)
      .values(row)
      .orIgnore()
      .returning('id')
      .execute();
    const id = (result.raw as { id: string }[])[0]?.id;
    return id ? this.findConnection(id) : null;
  }

  async updateConnection(id: string, patch: Partial<RepositoryConnectionEntity>): Promise<void> {
    await this.manager.update(RepositoryConnectionEntity, { id }, patch);
  }

  async deleteConnections(ids: string[]): Promise<void> {
    if (ids.length) await this.manager.delete(RepositoryConnectionEntity, { id: In(ids) });
  }

  // Deliveries -----------------------------------------------------------------------------------

  async insertDelivery(row: Partial<GithubDeliveryEntity>): Promise<GithubDeliveryEntity> {
    return this.manager.save(GithubDeliveryEntity, this.manager.create(GithubDeliveryEntity, row));
  }

  /** Records an accepted delivery once per X-GitHub-Delivery; null when that id was seen before. */
  async insertDeliveryOnce(row: Partial<GithubDeliveryEntity>): Promise<GithubDeliveryEntity | null> {
    const result = await this.manager
      .createQueryBuilder()
      .insert()
      .into(GithubDeliveryEntity)
      .values(row)
      .orIgnore()
      .returning('id')
      .execute();
    const id = (result.raw as { id: string }[])[0]?.id;
    return id ? this.findDelivery(id) : null;
  }

  findDelivery(id: string): Promise<GithubDeliveryEntity | null> {
    return this.manager.findOneBy(GithubDeliveryEntity, { id });
  }

  findDeliveryByGuid(guid: string): Promise<GithubDeliveryEntity | null> {
    return this.manager.findOneBy(GithubDeliveryEntity, { guid });
  }

  listDeliveries(connectionId: string, limit: number): Promise<GithubDeliveryEntity[]> {
    return this.manager.find(GithubDeliveryEntity, {
      where: { connectionId },
      order: { receivedAt: 'DESC' },
      take: limit,
    });
  }

  latestDelivery(connectionId: string): Promise<GithubDeliveryEntity | null> {
    return this.manager.findOne(GithubDeliveryEntity, {
      where: { connectionId, status: Not('rejected') },
      order: { receivedAt: 'DESC' },
    });
  }

  /**
   * Takes a delivery for processing (queued, failed, or stuck in processing for too long): one
   * conditional UPDATE, so a job and a redelivery never process it at the same time.
   */
  async claimDelivery(id: string): Promise<GithubDeliveryEntity | null> {
    const rows = await this.manager.query<unknown>(
      `UPDATE github_deliveries SET status = 'processing', attempts = attempts + 1, processed_at = now()
        WHERE id = $1 AND (status IN ('queued', 'failed') OR (status = 'processing' AND processed_at < now() - ${STALE_PROCESSING}))
        RETURNING id`,
      [id],
    );
    return returned<DeliveryIdRow>(rows).length ? this.findDelivery(id) : null;
  }

  async updateDelivery(id: string, patch: Partial<GithubDeliveryEntity>): Promise<void> {
    await this.manager.update(GithubDeliveryEntity, { id }, patch);
  }

  /** Queues a failed delivery again; false when it is not failed (any more). */
  async requeueFailed(id: string): Promise<boolean> {
    const rows = await this.manager.query<unknown>(
      `UPDATE github_deliveries SET status = 'queued' WHERE id = $1 AND status = 'failed' RETURNING id`,
      [id],
    );
    return returned<DeliveryIdRow>(rows).length === 1;
  }
}
