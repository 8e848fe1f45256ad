import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { QuotaGrantEntity } from './quota-grant.entity';

export interface QuotaGrantRow extends QuotaGrantEntity {
  holderName: string;
  grantedByLogin: string;
}

@Injectable()
export class QuotaGrantsRepository {
  constructor(private readonly dataSource: DataSource) {}

  insert(grant: Omit<QuotaGrantEntity, 'id' | 'createdAt'>): Promise<QuotaGrantEntity> {
    const repo = this.dataSource.getRepository(QuotaGrantEntity);
    return repo.save(repo.create(grant));
  }

  /** The extra runs granted to a holder in one bucket on one day, summed over its grants. */
  async extraRuns(benchmarkId: string, holderId: string, bucket: string, day: string): Promise<number> {
    const [row] = await this.dataSource.query<{ n: number }[]>(
      `SELECT coalesce(sum(extra_runs), 0)::int AS n FROM quota_grants
        WHERE benchmark_id = $1 AND holder_id = $2 AND bucket = $3 AND day = $4`,
      [benchmarkId, holderId, bucket, day],
    );
    return row.n;
  }

  /** A benchmark's grants from `fromDay` on, newest first, with the holder's and granter's names. */
  async list(benchmarkId: string, fromDay: string): Promise<QuotaGrantRow[]> {
    const rows = await this.dataSource.query<
      {
        id: string;
        benchmark_id: string;
        holder_id: string;
        holder_kind: 'team' | 'user';
        bucket: string;
        day: string;
        extra_runs: number;
        reason: string;
        granted_by: string;
        created_at: Date;
        holder_name: string | null;
        granted_by_login: string | null;
      }[]
    >(
      `SELECT g.*, to_char(g.day, 'YYYY-MM-DD') AS day,
              coalesce(t.name, u.login) AS holder_name, gb.login AS granted_by_login
         FROM quota_grants g
         LEFT JOIN teams t ON g.holder_kind = 'team' AND t.id::text = g.holder_id
         LEFT JOIN users u ON g.holder_kind = 'user' AND u.id::text = g.holder_id
         LEFT JOIN users gb ON gb.id = g.granted_by
        WHERE g.benchmark_id = $1 AND g.day >= $2
        ORDER BY g.created_at DESC LIMIT 200`,
      [benchmarkId, fromDay],
    );
    return rows.map((r) => ({
      id: r.id,
      benchmarkId: r.benchmark_id,
      holderId: r.holder_id,
      holderKind: r.holder_kind,
      bucket: r.bucket,
      day: r.day,
      extraRuns: r.extra_runs,
      reason: r.reason,
      grantedBy: r.granted_by,
      createdAt: r.created_at,
      holderName: r.holder_name ?? r.holder_id,
      grantedByLogin: r.granted_by_login ?? r.granted_by,
    }));
  }
}
