import { Injectable } from '@nestjs/common';
import { DataSource, Repository } from 'typeorm';
import { returned } from '../database/returned-rows';
import { RoundClockEntity } from './round-clock.entity';
import { ScheduledActionEntity } from './scheduled-action.entity';

/** The id of the scheduled action a replica claimed. */
interface ClaimedActionRow {
  id: string;
}

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
    const raw = await this.actions.query<unknown>(
      `UPDATE scheduled_actions SET status = 'running'
        WHERE id = (SELECT id FROM scheduled_actions WHERE status = 'pending' AND run_at <= $1
                     ORDER BY run_at, id FOR UPDATE SKIP LOCKED LIMIT 1)
        RETURNING id`,
      [now],
    );
    const rows = returned<ClaimedActionRow>(raw);
    return rows.length ? this.findAction(rows[0].id) : null;
  }

  /** Moves a pending action; its closing notice (if sent) is due again for the new time. */
  async move(id: string, runAt: Date): Promise<ScheduledActionEntity | null> {
    const res = await this.actions
      .createQueryBuilder()
      .update()
      .set({ runAt, noticeSentAt: null })
      .where(`id = :id AND status = 'pending'`, { id })
      .execute();
    return res.affected ? this.findAction(id) : null;
  }

  /**
   * Claims the next pending close whose notice is due (within `minutes` of now, the close itself
   * still ahead), once across replicas and restarts; null when none is due.
   */
  async claimDueNotice(now: Date, minutes: number): Promise<ScheduledActionEntity | null> {
    const raw = await this.actions.query<unknown>(
      `UPDATE scheduled_actions SET notice_sent_at = $1
        WHERE id = (SELECT id FROM scheduled_actions
                     WHERE status = 'pending' AND action = 'close' AND notice_sent_at IS NULL
                       AND run_at > $1 AND run_at <= $1::timestamptz + make_interval(mins => $2::int)
                     ORDER BY run_at, id FOR UPDATE SKIP LOCKED LIMIT 1)
        RETURNING id`,
      [now, minutes],
    );
    const rows = returned<ClaimedActionRow>(raw);
    return rows.length ? this.findAction(rows[0].id) : null;
  }

  /** When the next closing notice falls due (its close's time less `minutes`); null when none waits. */
  async nextNoticeAt(minutes: number): Promise<Date | null> {
    const rows = await this.actions.query<{ at: Date | null }[]>(
      `SELECT min(run_at) - make_interval(mins => $1::int) AS at FROM scheduled_actions
        WHERE status = 'pending' AND action = 'close' AND notice_sent_at IS NULL`,
      [minutes],
    );
    return rows[0]?.at ?? null;
  }

  async finish(id: string, status: 'done' | 'failed', at: Date, outcome: string): Promise<void> {
    await this.actions.update({ id }, { status, finishedAt: at, outcome });
  }

  async nextRunAt(): Promise<Date | null> {
    const next = await this.actions.findOne({ where: { status: 'pending' }, order: { runAt: 'ASC' } });
    return next?.runAt ?? null;
  }
}
