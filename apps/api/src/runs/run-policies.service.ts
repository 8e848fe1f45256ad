import { Injectable, OnModuleInit } from '@nestjs/common';
import { EventBus } from '../common/event-bus';
import { RunLifecycleService } from './run-lifecycle.service';
import { RunQueue } from './run-queue';
import { RunViews } from './run-views';
import { RunsRepository } from './runs.repository';

/**
 * What other domains' events do to runs: an organizer's new whole-run limit applies to runs in
 * progress, new rules invalidate earlier official results, and a ban cancels the runs its subject
 * has not started.
 */
@Injectable()
export class RunPoliciesService implements OnModuleInit {
  constructor(
    private readonly runs: RunsRepository,
    private readonly queue: RunQueue,
    private readonly lifecycle: RunLifecycleService,
    private readonly views: RunViews,
    private readonly bus: EventBus,
  ) {}

  onModuleInit(): void {
    this.bus.on('benchmark.settings_changed', ({ benchmarkId, runTimeLimitSeconds }) =>
      this.applyRunTimeLimit(benchmarkId, runTimeLimitSeconds),
    );
    this.bus.on('benchmark.rules_changed', ({ benchmarkId, rulesVersion, reason }) =>
      this.invalidateOlderResults(benchmarkId, rulesVersion, reason),
    );
    this.bus.on('ban.created', ({ userId, teamId, benchmarkId, reason }) =>
      this.cancelUnstartedOfBanned({ userId, teamId, benchmarkId }, reason),
    );
  }

  /** A changed whole-run limit applies to runs already in progress. */
  async applyRunTimeLimit(benchmarkId: string, seconds: number): Promise<void> {
    const changed = await this.queue.setLimitForUnfinished(benchmarkId, seconds);
    const views = await this.views.views(changed);
    changed.forEach((run, i) => {
      if (run.deadlineAt)
        this.bus.emit('run.deadline_changed', {
          runId: run.id,
          agentId: run.agentId,
          deadlineAt: run.deadlineAt.getTime(),
        });
      this.bus.emit('run.status', { run: views[i] });
    });
  }

  /** Official results under older rules stop ranking; the board is rebuilt without them. */
  async invalidateOlderResults(benchmarkId: string, rulesVersion: number, reason: string): Promise<void> {
    await this.queue.invalidateBefore(
      benchmarkId,
      rulesVersion,
      `Rules changed to version ${rulesVersion}: ${reason}`,
    );
    this.bus.emit('leaderboard.changed', { benchmarkId });
  }

  /** A ban cancels (and refunds) the runs its user or team has not started, on its benchmark or all. */
  async cancelUnstartedOfBanned(
    who: { userId: string | null; teamId: string | null; benchmarkId: string | null },
    reason: string,
  ): Promise<void> {
    const runs = await this.runs.unstartedOf(who);
    const subject = who.userId ? 'its author was' : 'the team was';
    for (const run of runs)
      await this.lifecycle.cancelRun(
        run.id,
        `Canceled before it started: ${subject} banned by an organizer (${reason}).`,
        `banned: ${reason}`,
      );
  }
}
