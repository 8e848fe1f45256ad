import { Injectable } from '@nestjs/common';
import { DataSource, Repository } from 'typeorm';
import { AuditEntryEntity } from './audit-entry.entity';

/** Insert and read only: the audit log has no update or delete path (and the database refuses both). */
@Injectable()
export class AuditRepository {
  private readonly repo: Repository<AuditEntryEntity>;

  constructor(dataSource: DataSource) {
    this.repo = dataSource.getRepository(AuditEntryEntity);
  }

  async insert(row: Omit<AuditEntryEntity, 'id' | 'at'>): Promise<AuditEntryEntity> {
    const saved = await this.repo.insert(row as never);
    return (await this.repo.findOneBy({ id: saved.identifiers[0].id as string }))!;
  }

  list(opts: {
    benchmarkId?: string;
    action?: string;
    targetId?: string;
    before?: { createdAt: Date; id: string };
    limit: number;
  }): Promise<AuditEntryEntity[]> {
    const q = this.repo.createQueryBuilder('a');
    if (opts.benchmarkId) q.andWhere('a.benchmark_id = :b', { b: opts.benchmarkId });
    if (opts.action) q.andWhere('a.action = :action', { action: opts.action });
    if (opts.targetId) q.andWhere('a.target_id = :t', { t: opts.targetId });
    if (opts.before)
      q.andWhere('(a.at, a.id) < (:at, :id)', { at: opts.before.createdAt, id: opts.before.id });
    return q.orderBy('a.at', 'DESC').addOrderBy('a.id', 'DESC').limit(opts.limit).getMany();
  }
}
