import { Injectable, OnModuleInit } from '@nestjs/common';
import type { BenchmarkDefinition, PublicBenchmark } from '@dryft/libs';
import { EventBus } from '../common/event-bus';
import { notFound } from '../common/errors';
import { BenchmarkRegistry } from './benchmark-registry';
import { BenchmarkSettingsEntity } from './benchmark-settings.entity';
import { BenchmarkSettingsRepository } from './benchmark-settings.repository';

/** A definition with the organizer's current settings applied. */
export type EffectiveBenchmark = BenchmarkDefinition & {
  rulesChangedReason: string | null;
  rulesChangedAt: Date | null;
};

export interface SettingsPatch {
  submissionsOpen?: boolean;
  evaluationsOpen?: boolean;
  runTimeLimitSeconds?: number;
  announcement?: string | null;
}

@Injectable()
export class BenchmarksService implements OnModuleInit {
  constructor(
    private readonly registry: BenchmarkRegistry,
    private readonly settings: BenchmarkSettingsRepository,
    private readonly bus: EventBus,
  ) {}

  async onModuleInit(): Promise<void> {
    await this.settings.insertMissing(
      this.registry.all().map((d) => ({
        benchmarkId: d.id,
        submissionsOpen: d.submissionsOpen,
        evaluationsOpen: d.evaluationsOpen,
        runTimeLimitSeconds: d.runTimeLimitSeconds,
        rulesVersion: d.rulesVersion,
        rulesChangedReason: null,
        rulesChangedAt: null,
        announcement: d.announcement ?? null,
      })),
    );
  }

  async list(): Promise<EffectiveBenchmark[]> {
    const settings = new Map((await this.settings.all()).map((s) => [s.benchmarkId, s]));
    return this.registry.all().map((d) => this.apply(d, settings.get(d.id)));
  }

  async get(id: string): Promise<EffectiveBenchmark> {
    const def = this.registry.get(id);
    if (!def) {
      const known = this.registry
        .all()
        .map((d) => d.id)
        .join(', ');
      throw notFound('benchmark_not_found', `No benchmark "${id}"; known benchmarks: ${known}.`);
    }
    const settings = (await this.settings.all()).find((s) => s.benchmarkId === id);
    return this.apply(def, settings);
  }

  async anyOpenForSubmissions(): Promise<boolean> {
    return (await this.list()).some((b) => b.submissionsOpen);
  }

  async update(id: string, patch: SettingsPatch): Promise<EffectiveBenchmark> {
    await this.get(id);
    if (Object.keys(patch).length) await this.settings.update(id, patch);
    const updated = await this.get(id);
    this.bus.emit('benchmark.settings_changed', {
      benchmarkId: id,
      runTimeLimitSeconds: updated.runTimeLimitSeconds,
    });
    return updated;
  }

  /** Earlier results stop counting: the leaderboard is rebuilt from runs under the new version. */
  async bumpRulesVersion(id: string, reason: string): Promise<EffectiveBenchmark> {
    const before = await this.get(id);
    const version = await this.settings.bumpRulesVersion(id, reason);
    this.bus.emit('benchmark.rules_changed', {
      benchmarkId: id,
      previousVersion: before.rulesVersion,
      rulesVersion: version,
      reason,
    });
    return this.get(id);
  }

  toPublic(b: EffectiveBenchmark): PublicBenchmark {
    const base = {
      id: b.id,
      title: b.title,
      summary: b.summary,
      kind: b.kind,
      ranks: b.ranks,
      rulesVersion: b.rulesVersion,
      submissionsOpen: b.submissionsOpen,
      evaluationsOpen: b.evaluationsOpen,
      runTimeLimitSeconds: b.runTimeLimitSeconds,
      hardware: b.hardware,
      scoring: b.scoring,
      announcement: b.announcement ?? null,
      rulesChangedAt: b.rulesChangedAt?.toISOString() ?? null,
      rulesChangedReason: b.rulesChangedReason,
    };
    if (b.kind === 'decode') {
      return {
        ...base,
        submission: { type: 'archive' },
        publicWorkloads: b.workloads.public,
        samples: b.samples,
        checks: b.checks,
        limits: b.limits,
      };
    }
    return {
      ...base,
      submission: { type: 'file', filename: b.submission.filename, maxBytes: b.submission.maxBytes },
      tiers: b.tiers.map((t) => ({
        id: t.id,
        title: t.title,
        trainingSeconds: t.trainingSeconds,
        dailyLimit: t.dailyLimit,
        ranked: t.ranked,
        datasets: b.datasets.filter((d) => d.tiers.includes(t.id)).map((d) => ({ id: d.id, title: d.title })),
      })),
    };
  }

  private apply(def: BenchmarkDefinition, s: BenchmarkSettingsEntity | undefined): EffectiveBenchmark {
    if (!s) return { ...def, rulesChangedReason: null, rulesChangedAt: null };
    return {
      ...def,
      announcement: s.announcement ?? undefined,
      submissionsOpen: s.submissionsOpen,
      evaluationsOpen: s.evaluationsOpen,
      runTimeLimitSeconds: s.runTimeLimitSeconds,
      rulesVersion: s.rulesVersion,
      rulesChangedReason: s.rulesChangedReason,
      rulesChangedAt: s.rulesChangedAt,
    };
  }
}
