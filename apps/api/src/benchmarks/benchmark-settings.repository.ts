import { Injectable } from '@nestjs/common';
import { DataSource, Repository } from 'typeorm';
import { returned } from '../database/returned-rows';
import { BenchmarkSettingsEntity } from './benchmark-settings.entity';

/** The rules version a bump produced. */
interface RulesVersionRow {
  rules_version: number;
}

@Injectable()
export class BenchmarkSettingsRepository {
  private readonly repo: Repository<BenchmarkSettingsEntity>;

  constructor(dataSource: DataSource) {
    this.repo = dataSource.getRepository(BenchmarkSettingsEntity);
  }

  all(): Promise<BenchmarkSettingsEntity[]> {
    return this.repo.find();
  }

  /** Seeds settings from the file the first time a benchmark is seen; later boots keep the organizer's changes. */
  async insertMissing(rows: Omit<BenchmarkSettingsEntity, 'updatedAt'>[]): Promise<void> {
    if (rows.length === 0) return;
    await this.repo.createQueryBuilder().insert().values(rows).orIgnore().execute();
  }

  /**
   * Raises a benchmark's stored rules version to its definition file's where the file's is higher
   * (a rules change shipped with the code, such as one that changes what K means), with the reason
   * shown on the page. Never lowers one: an organizer's later bumps stay. Returns what it raised.
   */
  async adoptFileRulesVersion(
    benchmarkId: string,
    fileVersion: number,
    reason: string,
  ): Promise<{ from: number; to: number } | null> {
    const raw = await this.repo.query<unknown>(
      `UPDATE benchmark_settings s SET rules_version = $2, rules_changed_reason = $3, rules_changed_at = now(), updated_at = now()
        FROM (SELECT rules_version FROM benchmark_settings WHERE benchmark_id = $1 FOR UPDATE) old
        WHERE s.benchmark_id = $1 AND s.rules_version < $2 RETURNING old.rules_version AS from_version`,
      [benchmarkId, fileVersion, reason],
    );
    const rows = returned<{ from_version: number }>(raw);
    return rows.length ? { from: rows[0].from_version, to: fileVersion } : null;
  }

  async update(
    benchmarkId: string,
    patch: Partial<BenchmarkSettingsEntity>,
  ): Promise<BenchmarkSettingsEntity> {
    await this.repo.update({ benchmarkId }, patch);
    return (await this.repo.findOneBy({ benchmarkId }))!;
  }

  /** Bumps the rules version atomically and returns the new one. */
  async bumpRulesVersion(benchmarkId: string, reason: string): Promise<number> {
    const raw = await this.repo.query<unknown>(
      `UPDATE benchmark_settings SET rules_version = rules_version + 1, rules_changed_reason = $2, rules_changed_at = now(), updated_at = now()
        WHERE benchmark_id = $1 RETURNING rules_version`,
      [benchmarkId, reason],
    );
    const rows = returned<RulesVersionRow>(raw);
    return rows[0].rules_version;
  }
}
