import { Injectable } from '@nestjs/common';
import { DataSource, EntityManager } from 'typeorm';
import { returned } from '../database/returned-rows';
import { IdempotencyKeyEntity } from './idempotency-key.entity';

@Injectable()
export class IdempotencyRepository {
  constructor(private readonly dataSource: DataSource) {}

  /** Claims the key in its own committed statement, so a concurrent request sees it as in flight. */
  async claim(teamId: string, key: string, requestHash: string): Promise<boolean> {
    const rows: { key: string }[] = await this.dataSource.query(
      `INSERT INTO idempotency_keys (team_id, key, request_hash, state) VALUES ($1, $2, $3, 'in_flight')
       ON CONFLICT (team_id, key) DO NOTHING RETURNING key`,
      [teamId, key, requestHash],
    );
    return rows.length === 1;
  }

  find(teamId: string, key: string): Promise<IdempotencyKeyEntity | null> {
    return this.dataSource.manager.findOneBy(IdempotencyKeyEntity, { teamId, key });
  }

  /** Marked done in the same transaction as the run it created: both exist, or neither. */
  async complete(
    manager: EntityManager,
    teamId: string,
    key: string,
    status: number,
    body: unknown,
  ): Promise<void> {
    await manager.update(
      IdempotencyKeyEntity,
      { teamId, key },
      { state: 'done', responseStatus: status, responseBody: body as object },
    );
  }

  async release(teamId: string, key: string): Promise<void> {
    await this.dataSource.manager.delete(IdempotencyKeyEntity, { teamId, key, state: 'in_flight' });
  }

  /** Takes over a key whose holder never finished (crashed before committing) or that expired. */
  async takeOver(
    teamId: string,
    key: string,
    requestHash: string,
    staleBefore: Date,
    expiredBefore: Date,
  ): Promise<boolean> {
    const rows: unknown = await this.dataSource.query(
      `UPDATE idempotency_keys SET request_hash = $3, state = 'in_flight', response_status = NULL, response_body = NULL, created_at = now()
        WHERE team_id = $1 AND key = $2 AND ((state = 'in_flight' AND created_at < $4) OR created_at < $5) RETURNING key`,
      [teamId, key, requestHash, staleBefore, expiredBefore],
    );
    return returned<{ key: string }>(rows).length === 1;
  }
}
