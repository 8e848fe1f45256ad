import * as path from 'node:path';
import { Injectable, Logger, OnModuleInit } from '@nestjs/common';
import type { AuditAction, BenchmarkDefinition, CalibrationSummary, PublicBenchmark } from '@dryft/libs';
import { DataSource } from 'typeorm';
import { AuditService } from '../audit/audit.service';
import type { Principal } from '../common/principal';
import { CalibrationEntity } from '../runs/calibration.entity';
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
  private readonly logger = new Logger(BenchmarksService.name);

  constructor(
    private readonly registry: BenchmarkRegistry,
    private readonly settings: BenchmarkSettingsRepository,
    private readonly bus: EventBus,
    private readonly dataSource: DataSource,
    private readonly audit: AuditService,
  ) {}

  /**
   * Per benchmark, the hardware keys whose K is calibrated under its current rules version (the
   * public view's "calibrated on NVIDIA H200 to ±0.8 %").
   */
  async calibrationSummaries(): Promise<Map<string, CalibrationSummary[]>> {
    const versions = new Map((await this.list()).map((b) => [b.id, b.rulesVersion]));
    const rows = await this.dataSource
      .getRepository(CalibrationEntity)
      .find({ order: { benchmarkId: 'ASC', hardware: 'ASC' } });
    const out = new Map<string, CalibrationSummary[]>();
    for (const r of rows) {
      if (versions.get(r.benchmarkId) !== r.rulesVersion) continue;
      const list = out.get(r.benchmarkId) ?? [];
      list.push({ hardware: r.hardware, halfWidthPct: r.k.halfWidthPct, pairs: r.k.pairs, runs: r.k.runs });
      out.set(r.benchmarkId, list);
    }
    return out;
  }

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
    // A hub that has seen a benchmark keeps its stored settings, so a rules version raised in the
    // file (shipped with a change of what runs measure) would otherwise never reach it, and a K
    // calibrated under the old rules would score runs under the new ones.
    for (const d of this.registry.all()) {
      const reason = `The benchmark's definition moved to rules version ${d.rulesVersion}; results and calibrations of earlier versions no longer count.`;
      const raised = await this.settings.adoptFileRulesVersion(d.id, d.rulesVersion, reason);
      if (raised) {
        this.logger.warn(
          `${d.id}: rules version ${raised.from} -> ${raised.to}, from the definition file (earlier results and K no longer count)`,
        );
      }
    }
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

  /**
   * An organizer's change (open/close, whole-run time limit, announcement): applied, then each
   * setting it really changed is recorded in the audit log, from and to, with the reason.
   */
  async changeSettings(
    principal: Principal,
    id: string,
    patch: SettingsPatch,
    reason: string | undefined,
  ): Promise<EffectiveBenchmark> {
    const before = await this.get(id);
    const after = await this.update(id, patch);
    const changes: [AuditAction, unknown, unknown][] = [];
    if (patch.submissionsOpen !== undefined && patch.submissionsOpen !== before.submissionsOpen)
      changes.push([
        patch.submissionsOpen ? 'benchmark.open_submissions' : 'benchmark.close_submissions',
        before.submissionsOpen,
        after.submissionsOpen,
      ]);
    if (patch.evaluationsOpen !== undefined && patch.evaluationsOpen !== before.evaluationsOpen)
      changes.push([
        patch.evaluationsOpen ? 'benchmark.open_evaluations' : 'benchmark.close_evaluations',
        before.evaluationsOpen,
        after.evaluationsOpen,
      ]);
    if (patch.runTimeLimitSeconds !== undefined && patch.runTimeLimitSeconds !== before.runTimeLimitSeconds)
      changes.push(['benchmark.run_time_limit', before.runTimeLimitSeconds, after.runTimeLimitSeconds]);
    if (patch.announcement !== undefined && patch.announcement !== (before.announcement ?? null))
      changes.push(['benchmark.announcement', before.announcement ?? null, after.announcement ?? null]);
    for (const [action, from, to] of changes)
      await this.audit.record(principal, {
        action,
        target: { kind: 'benchmark', id },
        benchmarkId: id,
        reason: reason || null,
        details: { from, to },
      });
    return after;
  }

  /**
   * Earlier results stop counting: the leaderboard is rebuilt from runs under the new version. The
   * organizer's bump is recorded in the audit log with its reason.
   */
  async bumpRulesVersion(principal: Principal, id: string, reason: string): Promise<EffectiveBenchmark> {
    const before = await this.get(id);
    const version = await this.settings.bumpRulesVersion(id, reason);
    this.bus.emit('benchmark.rules_changed', {
      benchmarkId: id,
      previousVersion: before.rulesVersion,
      rulesVersion: version,
      reason,
    });
    const after = await this.get(id);
    await this.audit.record(principal, {
      action: 'benchmark.rules_bump',
      target: { kind: 'benchmark', id },
      benchmarkId: id,
      reason,
      details: { from: before.rulesVersion, to: after.rulesVersion },
    });
    return after;
  }

  /** The public view; `calibrations` (decode): the summary of its calibrated keys, when read. */
  toPublic(b: EffectiveBenchmark, calibrations?: CalibrationSummary[]): PublicBenchmark {
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
      starterFolder: path.basename(b.starter),
      announcement: b.announcement ?? null,
      rulesChangedAt: b.rulesChangedAt?.toISOString() ?? null,
      rulesChangedReason: b.rulesChangedReason,
      finalBoard: b.finalBoard ?? null,
    };
    if (b.kind === 'decode') {
      return {
        ...base,
        submission: { type: 'archive' },
        publicWorkloads: b.workloads.public,
        samples: b.samples,
        checks: b.checks,
        limits: b.limits,
        ...(calibrations ? { calibrations } : {}),
        dailyLimits: b.dailyLimits,
        model: { checkpoint: b.model.checkpoint ?? null, revision: b.model.revision ?? null },
        runtime: b.runtime ?? null,
      };
    }
    return {
      ...base,
      submission: { type: 'file', filename: b.submission.filename, maxBytes: b.submission.maxBytes },
      maxModelStateElements: b.maxModelStateElements,
      tiers: b.tiers.map((t) => ({
        id: t.id,
        title: t.title,
        trainingSeconds: t.trainingSeconds,
        evalSeconds: t.evalSeconds,
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
