import { Injectable } from '@nestjs/common';
import { DataSource, EntityManager, IsNull, Repository } from 'typeorm';
import { TeamWebhookEntity } from './team-webhook.entity';
import { WebhookDeliveryEntity } from './webhook-delivery.entity';

@Injectable()
export class WebhooksRepository {
  private readonly hooks: Repository<TeamWebhookEntity>;
  private readonly deliveries: Repository<WebhookDeliveryEntity>;

  constructor(readonly dataSource: DataSource) {
    this.hooks = dataSource.getRepository(TeamWebhookEntity);
    this.deliveries = dataSource.getRepository(WebhookDeliveryEntity);
  }

  async create(row: Pick<TeamWebhookEntity, 'teamId' | 'url' | 'secret' | 'events' | 'createdBy'>) {
    const saved = await this.hooks.insert(row);
    return (await this.hooks.findOneBy({ id: saved.identifiers[0].id as string }))!;
  }

  listForTeam(teamId: string): Promise<TeamWebhookEntity[]> {
    return this.hooks.find({ where: { teamId, deletedAt: IsNull() }, order: { createdAt: 'ASC' } });
  }

  /**
   * The live webhooks subscribed to `event` of every team that submitted to the benchmark (the
   * teams taking part in it).
   */
  subscribedForBenchmark(benchmarkId: string, event: string): Promise<TeamWebhookEntity[]> {
    return this.hooks
      .createQueryBuilder('h')
      .where('h.deleted_at IS NULL')
      .andWhere(':event = ANY(h.events)', { event })
      .andWhere(
        'EXISTS (SELECT 1 FROM submissions s WHERE s.team_id = h.team_id AND s.benchmark_id = :benchmarkId)',
        { benchmarkId },
      )
      .orderBy('h.created_at', 'ASC')
      .getMany();
  }

  find(teamId: string, id: string): Promise<TeamWebhookEntity | null> {
    return this.hooks.findOneBy({ id, teamId, deletedAt: IsNull() });
  }

  findAny(id: string): Promise<TeamWebhookEntity | null> {
    return this.hooks.findOneBy({ id });
  }

  async remove(id: string, at: Date): Promise<void> {
    await this.hooks.update({ id }, { deletedAt: at });
  }

  async anyActive(): Promise<boolean> {
    return (await this.hooks.count({ where: { deletedAt: IsNull() }, take: 1 })) > 0;
  }

  async insertDelivery(
    manager: EntityManager,
    row: Pick<WebhookDeliveryEntity, 'id' | 'webhookId' | 'teamId' | 'event' | 'runId' | 'body'>,
  ): Promise<void> {
    await manager.getRepository(WebhookDeliveryEntity).insert(row);
  }

  findDelivery(id: string): Promise<WebhookDeliveryEntity | null> {
    return this.deliveries.findOneBy({ id });
  }

  listDeliveries(webhookId: string, limit: number): Promise<WebhookDeliveryEntity[]> {
    return this.deliveries.find({
      where: { webhookId },
      order: { createdAt: 'DESC', id: 'DESC' },
      take: limit,
    });
  }

  async recordAttempt(
    id: string,
    outcome: {
      status: 'pending' | 'succeeded' | 'failed';
      statusCode: number | null;
      error: string | null;
      at: Date;
    },
  ): Promise<void> {
    await this.deliveries
      .createQueryBuilder()
      .update()
      .set({
        attempts: () => 'attempts + 1',
        status: outcome.status,
        lastStatusCode: outcome.statusCode,
        lastError: outcome.error,
        deliveredAt: outcome.status === 'succeeded' ? outcome.at : null,
      })
      .where('id = :id', { id })
      .execute();
  }
}
