import { Inject, Injectable, Logger, OnApplicationBootstrap, OnModuleDestroy } from '@nestjs/common';
import type {
  BenchmarkClockView,
  MoveScheduleBody,
  RoundClosingNotice,
  ScheduleBody,
  ScheduledActionView,
  SetRoundBody,
} from '@dryft/libs';
import { AuditService } from '../audit/audit.service';
import { BenchmarksService, type SettingsPatch } from '../benchmarks/benchmarks.service';
import { Clock } from '../common/clock';
import { badRequest, conflict, notFound } from '../common/errors';
import { EventBus } from '../common/event-bus';
import type { Principal } from '../common/principal';
import { CONFIG, Config } from '../config/config';
import type { ScheduledActionEntity } from './scheduled-action.entity';
import { RoundClockRepository } from './round-clock.repository';

/** Even with nothing scheduled here, look again this often (another replica may have scheduled). */
const RECHECK_MS = 30_000;

/**
 * The round clock (displayed only) and the opens/closes an organizer schedules. A scheduled action
 * is claimed once across replicas (`FOR UPDATE SKIP LOCKED`) when its time comes, applied through
 * the same settings path as the organizer's own switch, and recorded in the audit log in the
 * scheduling organizer's name. Every change goes to every `/live` socket as `benchmark.clock`.
 *
 * ROUND_CLOSING_NOTICE_MINUTES before a scheduled close (at once when it was scheduled sooner), the
 * close's notice is claimed the same way (its `notice_sent_at`) and said on the bus as
 * `benchmark.notice` (`round.closing`): the live gateway tells every socket, team webhooks post it.
 * Moving the close makes its notice due again; a canceled close is never announced.
 */
@Injectable()
export class RoundClockService implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger('RoundClock');
  private timer?: NodeJS.Timeout;
  private ticking = false;
  private stopped = false;
  private readonly unsubscribe: (() => void)[] = [];

  constructor(
    private readonly repo: RoundClockRepository,
    private readonly benchmarks: BenchmarksService,
    private readonly audit: AuditService,
    private readonly clock: Clock,
    private readonly bus: EventBus,
    @Inject(CONFIG) private readonly config: Config,
  ) {}

  onApplicationBootstrap(): void {
    this.unsubscribe.push(
      this.bus.on('benchmark.settings_changed', async ({ benchmarkId }) => {
        await this.announce(benchmarkId);
      }),
    );
    void this.arm();
  }

  onModuleDestroy(): void {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    for (const u of this.unsubscribe) u();
  }

  async view(benchmarkId: string): Promise<BenchmarkClockView> {
    const b = await this.benchmarks.get(benchmarkId);
    const [round, pending] = await Promise.all([this.repo.round(b.id), this.repo.pending(b.id)]);
    return {
      benchmarkId: b.id,
      round: round
        ? { name: round.name, startsAt: round.startsAt.toISOString(), endsAt: round.endsAt.toISOString() }
        : null,
      submissionsOpen: b.submissionsOpen,
      evaluationsOpen: b.evaluationsOpen,
      scheduled: pending.map(actionView),
      serverTime: this.clock.now().toISOString(),
    };
  }

  async setRound(principal: Principal, benchmarkId: string, body: SetRoundBody): Promise<BenchmarkClockView> {
    await this.benchmarks.get(benchmarkId);
    const before = await this.repo.round(benchmarkId);
    const round = await this.repo.setRound({
      benchmarkId,
      name: body.name,
      startsAt: new Date(body.startsAt),
      endsAt: new Date(body.endsAt),
      updatedBy: principal.user.id,
    });
    await this.audit.record(principal, {
      action: 'round.set',
      target: { kind: 'benchmark', id: benchmarkId },
      benchmarkId,
      reason: body.reason || null,
      details: {
        from: before ? { name: before.name, startsAt: before.startsAt, endsAt: before.endsAt } : null,
        to: { name: round.name, startsAt: round.startsAt, endsAt: round.endsAt },
      },
    });
    return this.announce(benchmarkId);
  }

  async clearRound(principal: Principal, benchmarkId: string, reason?: string): Promise<BenchmarkClockView> {
    await this.benchmarks.get(benchmarkId);
    const before = await this.repo.round(benchmarkId);
    if (!before) throw notFound('round_not_set', `No round clock is set for ${benchmarkId}.`);
    await this.repo.clearRound(benchmarkId);
    await this.audit.record(principal, {
      action: 'round.clear',
      target: { kind: 'benchmark', id: benchmarkId },
      benchmarkId,
      reason: reason?.trim() || null,
      details: { from: { name: before.name, startsAt: before.startsAt, endsAt: before.endsAt } },
    });
    return this.announce(benchmarkId);
  }

  async schedule(
    principal: Principal,
    benchmarkId: string,
    body: ScheduleBody,
  ): Promise<ScheduledActionView> {
    await this.benchmarks.get(benchmarkId);
    const at = new Date(body.at);
    if (at.getTime() <= this.clock.now().getTime())
      throw badRequest(
        'schedule_in_past',
        'at must be in the future; to open or close now, use PATCH /api/admin/benchmarks/:id.',
      );
    const action = await this.repo.schedule({
      benchmarkId,
      action: body.action,
      target: body.target,
      runAt: at,
      reason: body.reason || null,
      createdBy: principal.user.id,
      createdByLogin: principal.user.login,
    });
    await this.audit.record(principal, {
      action: 'schedule.create',
      target: { kind: 'schedule', id: action.id },
      benchmarkId,
      reason: action.reason,
      details: { action: body.action, target: body.target, at: at.toISOString() },
    });
    await this.announce(benchmarkId);
    void this.arm();
    return actionView(action);
  }

  async cancel(principal: Principal, id: string, reason?: string): Promise<ScheduledActionView> {
    const existing = await this.repo.findAction(id);
    if (!existing) throw notFound('schedule_not_found', `No scheduled action ${id}.`);
    const why = reason?.trim() || null;
    const canceled = await this.repo.cancel(
      id,
      this.clock.now(),
      `canceled by ${principal.user.login}${why ? `: ${why}` : ''}`,
    );
    if (!canceled)
      throw conflict(
        'schedule_not_pending',
        `This action is already ${existing.status}; only a pending one can be canceled.`,
      );
    await this.audit.record(principal, {
      action: 'schedule.cancel',
      target: { kind: 'schedule', id },
      benchmarkId: canceled.benchmarkId,
      reason: why,
      details: { action: canceled.action, target: canceled.target, at: canceled.runAt.toISOString() },
    });
    await this.announce(canceled.benchmarkId);
    return actionView(canceled);
  }

  /** Moves a pending action to another time; a close's notice goes out again for the new time. */
  async move(principal: Principal, id: string, body: MoveScheduleBody): Promise<ScheduledActionView> {
    const existing = await this.repo.findAction(id);
    if (!existing) throw notFound('schedule_not_found', `No scheduled action ${id}.`);
    const at = new Date(body.at);
    if (at.getTime() <= this.clock.now().getTime())
      throw badRequest(
        'schedule_in_past',
        'at must be in the future; to open or close now, use PATCH /api/admin/benchmarks/:id.',
      );
    const moved = await this.repo.move(id, at);
    if (!moved)
      throw conflict(
        'schedule_not_pending',
        `This action is already ${existing.status}; only a pending one can be moved.`,
      );
    await this.audit.record(principal, {
      action: 'schedule.move',
      target: { kind: 'schedule', id },
      benchmarkId: moved.benchmarkId,
      reason: body.reason || null,
      details: {
        action: moved.action,
        target: moved.target,
        from: existing.runAt.toISOString(),
        to: at.toISOString(),
      },
    });
    await this.announce(moved.benchmarkId);
    void this.arm();
    return actionView(moved);
  }

  async list(benchmarkId: string | undefined): Promise<ScheduledActionView[]> {
    if (benchmarkId) await this.benchmarks.get(benchmarkId);
    return (await this.repo.recent(benchmarkId, 100)).map(actionView);
  }

  /** Runs every due action, then sleeps until the next one (or the periodic re-check). */
  async tick(): Promise<void> {
    if (this.ticking || this.stopped) return;
    this.ticking = true;
    try {
      // Notices first: a close that is due now and was never announced is not announced after it.
      const minutes = this.config.ROUND_CLOSING_NOTICE_MINUTES;
      for (;;) {
        if (minutes <= 0) break;
        const close = await this.repo.claimDueNotice(this.clock.now(), minutes);
        if (!close) break;
        await this.notice(close);
      }
      for (;;) {
        const due = await this.repo.claimDue(this.clock.now());
        if (!due) break;
        await this.execute(due);
      }
    } catch (err) {
      this.logger.error(`scheduled actions: ${(err as Error).stack ?? err}`);
    } finally {
      this.ticking = false;
    }
    await this.arm();
  }

  private async execute(a: ScheduledActionEntity): Promise<void> {
    const open = a.action === 'open';
    const patch: SettingsPatch = {};
    if (a.target !== 'evaluations') patch.submissionsOpen = open;
    if (a.target !== 'submissions') patch.evaluationsOpen = open;
    try {
      const before = await this.benchmarks.get(a.benchmarkId);
      await this.benchmarks.update(a.benchmarkId, patch);
      const actor = { user: { id: a.createdBy, login: a.createdByLogin } };
      const changes: ['submissions' | 'evaluations', boolean][] = [];
      if (patch.submissionsOpen !== undefined && before.submissionsOpen !== open)
        changes.push(['submissions', before.submissionsOpen]);
      if (patch.evaluationsOpen !== undefined && before.evaluationsOpen !== open)
        changes.push(['evaluations', before.evaluationsOpen]);
      for (const [what, from] of changes)
        await this.audit.record(actor, {
          action: `benchmark.${open ? 'open' : 'close'}_${what}`,
          target: { kind: 'benchmark', id: a.benchmarkId },
          benchmarkId: a.benchmarkId,
          reason: a.reason,
          details: { from, to: open, scheduled: true, scheduleId: a.id, scheduledFor: a.runAt.toISOString() },
        });
      const outcome = changes.length
        ? `${changes.map(([w]) => w).join(' and ')} ${open ? 'opened' : 'closed'}`
        : `already ${open ? 'open' : 'closed'}; nothing changed`;
      await this.repo.finish(a.id, 'done', this.clock.now(), outcome);
      if (!changes.length) await this.announce(a.benchmarkId);
      // The round is over: the verified final board (reruns/) starts its re-runs from this.
      else if (!open)
        this.bus.emit('round.closed', {
          benchmarkId: a.benchmarkId,
          scheduleId: a.id,
          by: actor.user,
          reason: a.reason,
        });
    } catch (err) {
      await this.repo.finish(a.id, 'failed', this.clock.now(), (err as Error).message);
      this.logger.error(`scheduled ${a.action} of ${a.benchmarkId} failed: ${(err as Error).message}`);
      await this.announce(a.benchmarkId);
    }
  }

  /**
   * Tells every team a close is near. The claim (committed before this) makes it once per scheduled
   * close: a replica that dies between the claim and the bus loses that one notice rather than
   * sending it twice.
   */
  private async notice(close: ScheduledActionEntity): Promise<void> {
    try {
      const b = await this.benchmarks.get(close.benchmarkId);
      const now = this.clock.now();
      const notice: RoundClosingNotice = {
        kind: 'round.closing',
        benchmarkId: b.id,
        benchmarkTitle: b.title,
        scheduleId: close.id,
        target: close.target as RoundClosingNotice['target'],
        closesAt: close.runAt.toISOString(),
        minutesLeft: Math.max(0, Math.ceil((close.runAt.getTime() - now.getTime()) / 60_000)),
        sentAt: now.toISOString(),
      };
      this.bus.emit('benchmark.notice', { notice });
      // The clock's pending close now carries noticeSentAt: pages opened later show the banner too.
      await this.announce(b.id);
    } catch (err) {
      this.logger.error(`closing notice of ${close.benchmarkId}: ${(err as Error).message}`);
    }
  }

  private async arm(): Promise<void> {
    if (this.stopped) return;
    const minutes = this.config.ROUND_CLOSING_NOTICE_MINUTES;
    const [action, notice] = await Promise.all([
      this.repo.nextRunAt().catch(() => null),
      minutes > 0 ? this.repo.nextNoticeAt(minutes).catch(() => null) : null,
    ]);
    const next = action && notice ? (action < notice ? action : notice) : (action ?? notice);
    if (this.stopped) return;
    if (this.timer) clearTimeout(this.timer);
    const delay = next ? Math.max(0, next.getTime() - this.clock.now().getTime()) : RECHECK_MS;
    this.timer = setTimeout(() => void this.tick(), Math.min(delay, RECHECK_MS));
    this.timer.unref();
  }

  /** Says the benchmark's clock as it stands now; the live gateway broadcasts it to every spectator. */
  private async announce(benchmarkId: string): Promise<BenchmarkClockView> {
    const clock = await this.view(benchmarkId);
    this.bus.emit('benchmark.clock_changed', { clock });
    return clock;
  }
}

function actionView(a: ScheduledActionEntity): ScheduledActionView {
  return {
    id: a.id,
    benchmarkId: a.benchmarkId,
    action: a.action as ScheduledActionView['action'],
    target: a.target as ScheduledActionView['target'],
    at: a.runAt.toISOString(),
    reason: a.reason,
    createdBy: a.createdByLogin,
    status: a.status as ScheduledActionView['status'],
    finishedAt: a.finishedAt?.toISOString() ?? null,
    outcome: a.outcome,
    noticeSentAt: a.noticeSentAt?.toISOString() ?? null,
  };
}
