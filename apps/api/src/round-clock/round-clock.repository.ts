import { Injectable } from '@nestjs/common';
import { DataSource, Repository } from 'typeorm';
import { returned } from '../database/returned-rows';
import { RoundClockEntity, ScheduledActionEntity } from './round-clock.entities';

@Injectable()
export class RoundClockRepository {
  private readonly rounds: Repository<RoundClockEntity>;
  private readonly actions: Repository<ScheduledActionEntity>;

  constructor(dataSource: DataSource) {
    this.rounds = dataSource.getRepository(RoundClockEntity);
    this.actions = dataSource.getRepository(ScheduledActionEntity);
  }

  round(benchmarkId: string): Promise<RoundClockEntity | null> {
    return this.rounds.findOneBy({ benchmarkId });
  }

  async setRound(row: Omit<RoundClockEntity, 'updatedAt'>): Promise<RoundClockEntity> {
    await this.rounds.upsert(row, ['benchmarkId']);
    return (await this.round(row.benchmarkId))!;
  }

  async clearRound(benchmarkId: string): Promise<boolean> {
    return ((await this.rounds.delete({ benchmarkId })).affected ?? 0) > 0;
  }

  async schedule(
    row: Pick<
      ScheduledActionEntity,
      'benchmarkId' | 'action' | 'target' | 'runAt' | 'reason' | 'createdBy' | 'createdByLogin'
    >,
  ): Promise<ScheduledActionEntity> {
    const saved = await this.actions.insert(row);
    return (await this.actions.findOneBy({ id: saved.identifiers[0].id as string }))!;
  }

  findAction(id: string): Promise<ScheduledActionEntity | null> {
    return this.actions.findOneBy({ id });
  }

  pending(benchmarkId?: string): Promise<ScheduledActionEntity[]> {
    return this.actions.find({
      where: benchmarkId ? { status: 'pending', benchmarkId } : { status: 'pending' },
      order: { runAt: 'ASC', id: 'ASC' },
    });
  }

  recent(benchmarkId: string | undefined, limit: number): Promise<ScheduledActionEntity[]> {
    return this.actions.find({
      where: benchmarkId ? { benchmarkId } : {},
      order: { runAt: 'DESC', id: 'DESC' },
      take: limit,
    });
  }

  async cancel(id: string, at: Date, outcome: string): Promise<ScheduledActionEntity | null> {
    const res = await this.actions
      .createQueryBuilder()
      .update()
      .set({ status: 'canceled', finishedAt: at, outcome })
      .where(`id = :id AND status = 'pending'`, { id })
      .execute();
    return res.affected ? this.findAction(id) : null;
  }

  /** Claims the next due action (once across replicas); null when none is due. */
  async claimDue(now: Date): Promise<ScheduledActionEntity | null> {
    const raw = await this.actions.query(
      `UPDATE scheduled_actions SET status = 'running'
        WHERE id = (SELECT id FROM scheduled_actions WHERE status = 'pending' AND run_at <= $1
                     ORDER BY run_at, id FOR UPDATE SKIP LOCKED LIMIT 1)
        RETURNING id`,
      [now],
    );
    const rows = returned<{ id: string }>(raw);
    return rows.length ? this.findAction(rows[0].id) : null;
  }

  async finish(id: string, status: 'done' | 'failed', at: Date, outcome: string): Promise<void> {
    await this.actions.update({ id }, { status, finishedAt: at, outcome });
  }

  async nextRunAt(): Promise<Date | null> {
    const next = await this.actions.findOne({ where: { status: 'pending' }, order: { runAt: 'ASC' } });
    return next?.runAt ?? null;
  }
}
