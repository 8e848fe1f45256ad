import { Injectable, Logger } from '@nestjs/common';
import type {
  BenchmarkClockView,
  BenchmarkNotice,
  CheckView,
  LogLine,
  MetricView,
  RunResultView,
  RunView,
  SampleView,
} from '@dryft/libs';

/**
 * The typed in-process event bus: domains announce what happened and other domains react, without
 * services calling each other in circles. Handlers run after the emitter's transaction committed;
 * one failing handler is logged and never breaks the emitter or the other handlers.
 */
export interface DomainEvents {
  'team.member_left': { teamId: string; userId: string };
  'team.member_removed': { teamId: string; userId: string };
  'team.member_joined': { teamId: string; userId: string };
  /** A user's login, name or avatar changed (boards and public team pages show them). */
  'user.profile_changed': { userId: string };
  'benchmark.settings_changed': { benchmarkId: string; runTimeLimitSeconds: number };
  /** A hardware key's pooled K changed (a calibration run pooled, or K's forgotten). */
  'benchmark.calibrated': { benchmarkId: string };
  'benchmark.rules_changed': {
    benchmarkId: string;
    previousVersion: number;
    rulesVersion: number;
    reason: string;
  };
  'run.queued': { runId: string; benchmarkId: string };
  'run.cancel_requested': { runId: string; agentId: string | null; reason: string };
  'run.deadline_changed': { runId: string; agentId: string | null; deadlineAt: number };
  'run.status': { run: RunView };
  'run.logs': { runId: string; lines: LogLine[] };
  'run.sample': { runId: string; sample: SampleView };
  'run.check': { runId: string; check: CheckView };
  'run.metric': { runId: string; metric: MetricView };
  'run.result': { runId: string; result: RunResultView };
  /** A run reached a final state (emitted once, by the replica that ended it); its slot (if it had one) is free. */
  'run.finished': { runId: string; agentId: string | null; slot: number | null; run: RunView };
  /** An agent's batch was handled (stored, a resend acknowledged, or refused) in `seconds` (metrics). */
  'run.batch_handled': { runId: string; seconds: number };
  'leaderboard.changed': { benchmarkId: string };
  'leaderboard.final_published': { benchmarkId: string; publishedAt: number };
  /**
   * A scheduled close took effect (submissions and/or evaluations closed by the round clock), in
   * the name of the organizer who scheduled it: the final board's re-runs start from it.
   */
  'round.closed': {
    benchmarkId: string;
    scheduleId: string;
    by: { id: string; login: string };
    reason: string | null;
  };
  /** A benchmark's round clock changed (opened, closed, frozen, a schedule set or run): spectators see it live. */
  'benchmark.clock_changed': { clock: BenchmarkClockView };
  /**
   * News for every team of a benchmark (emitted once, by the replica that claimed it): a scheduled
   * close is near, or the final board is published. Live sockets and team webhooks hear it.
   */
  'benchmark.notice': { notice: BenchmarkNotice };
  /**
   * A credential stopped granting access (a team API token revoked, a session ended by logout):
   * connections holding it leave every private room at once.
   */
  'access.lost':
    | { reason: 'token_revoked'; tokenId: string; teamId: string }
    | { reason: 'logged_out'; sessionHash: string; userId: string };
  /** An organizer banned a user or a team (benchmark null: hub-wide); their unstarted runs are canceled. */
  'ban.created': {
    banId: string;
    userId: string | null;
    teamId: string | null;
    benchmarkId: string | null;
    reason: string;
  };
}

type Handler<K extends keyof DomainEvents> = (payload: DomainEvents[K]) => void | Promise<void>;

@Injectable()
export class EventBus {
  private readonly logger = new Logger('EventBus');
  private readonly handlers = new Map<keyof DomainEvents, Handler<any>[]>();

  on<K extends keyof DomainEvents>(event: K, handler: Handler<K>): () => void {
    const list = this.handlers.get(event) ?? [];
    list.push(handler);
    this.handlers.set(event, list);
    return () => {
      const current = this.handlers.get(event) ?? [];
      this.handlers.set(
        event,
        current.filter((h) => h !== handler),
      );
    };
  }

  emit<K extends keyof DomainEvents>(event: K, payload: DomainEvents[K]): void {
    for (const handler of this.handlers.get(event) ?? []) {
      Promise.resolve()
        .then(() => handler(payload))
        .catch((err) => this.logger.error(`${String(event)} handler failed: ${(err as Error).stack ?? err}`));
    }
  }
}
