import { Body, Controller, HttpCode, Param, Patch, Post, UseGuards } from '@nestjs/common';
import type { AuditAction, PublicBenchmark } from '@dryft/libs';
import { AuditService } from '../audit/audit.service';
import { AdminGuard } from '../common/admin.guard';
import { CurrentPrincipal, Principal } from '../common/principal';
import { BenchmarksService } from './benchmarks.service';
import { BumpRulesDto, UpdateBenchmarkDto } from './dto';

@Controller()
export class BenchmarksController {
  constructor(
    private readonly benchmarks: BenchmarksService,
    private readonly audit: AuditService,
  ) {}

  // The public reads (GET api/benchmarks, api/benchmarks/:id) are served from memory by
  // LeaderboardsController (PublicSnapshots).

  /** Organizer controls: open/close, whole-run time limit (applies to runs in progress), announcement. */
  @UseGuards(AdminGuard)
  @Patch('api/admin/benchmarks/:id')
  async update(
    @CurrentPrincipal() principal: Principal,
    @Param('id') id: string,
    @Body() body: UpdateBenchmarkDto,
  ): Promise<PublicBenchmark> {
    const { reason, ...patch } = body;
    const before = await this.benchmarks.get(id);
    const after = await this.benchmarks.update(id, patch);
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
    return this.benchmarks.toPublic(after);
  }

  @UseGuards(AdminGuard)
  @Post('api/admin/benchmarks/:id/rules-version')
  @HttpCode(200)
  async bumpRules(
    @CurrentPrincipal() principal: Principal,
    @Param('id') id: string,
    @Body() body: BumpRulesDto,
  ): Promise<PublicBenchmark> {
    const before = await this.benchmarks.get(id);
    const after = await this.benchmarks.bumpRulesVersion(id, body.reason);
    await this.audit.record(principal, {
      action: 'benchmark.rules_bump',
      target: { kind: 'benchmark', id },
      benchmarkId: id,
      reason: body.reason,
      details: { from: before.rulesVersion, to: after.rulesVersion },
    });
    return this.benchmarks.toPublic(after);
  }
}
