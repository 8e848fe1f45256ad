import { Inject, Injectable, Logger, OnApplicationBootstrap, OnModuleDestroy } from '@nestjs/common';
import { Clock } from '../common/clock';
import { CONFIG, Config } from '../config/config';
import { AgentConnections } from '../agents/agent-connections';
import { RunLifecycleService } from './run-lifecycle.service';
import { RunQueue } from './run-queue';
import { forRun } from '../common/logging';

/**
 * Enforces leases and whole-run deadlines from the server side, whether or not any agent reports:
 * a run whose agent stopped renewing its lease fails as infra_error (it is never handed to a second
 * agent, so it can never execute twice at once); a run past its deadline (plus a short grace for the
 * agent's own verdict to land) is stopped by the lifecycle. Every replica sweeps; the lifecycle's
 * transitions are conditional, so two sweepers never apply the same outcome twice. It reads which
 * agents spoke lately from the agents' sockets, so AgentsModule provides it.
 */
@Injectable()
export class RunSweeper implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger('RunSweeper');
  private timer?: NodeJS.Timeout;
  private sweeping = false;
  /**
   * Leases are judged only after a lease period plus the agents' reconnect backoff (capped at 5 s
   * while they hold runs) of uptime: while this process was down nobody could renew them.
   */
  private readonly bootedAt = Date.now();
  /** How long an agent that lost its socket may take to be back (its backoff is capped at 5 s while it holds runs). */
  private static readonly RECONNECT_GRACE_MS = 6_000;
  /** The last tick, on the monotonic clock and on the wall clock (to notice a pause or a clock jump). */
  private lastTick = { mono: performance.now(), wall: Date.now() };
  /** After a pause, deadlines wait this long (monotonic) for the verdicts queued meanwhile. */
  private settleUntil = 0;

  constructor(
    private readonly repo: RunQueue,
    private readonly lifecycle: RunLifecycleService,
    private readonly connections: AgentConnections,
    private readonly clock: Clock,
    @Inject(CONFIG) private readonly config: Config,
  ) {}

  get intervalMs(): number {
    // A quarter of the lease, between 250 ms (tests use second-long leases) and 5 s.
    return Math.min(5_000, Math.max(250, (this.config.AGENT_LEASE_SECONDS * 1000) / 4));
  }

  /**
   * A gap between ticks this long means this process did not run (SIGSTOP, a VM paused, the event
   * loop blocked) or the wall clock jumped. It is below the shortest pause that can expire a healthy
   * lease (an agent renews every third of the lease, so a lease has at least 2/3 of it left).
   */
  get pauseThresholdMs(): number {
    return Math.min(2 * this.intervalMs + 1_000, (this.config.AGENT_LEASE_SECONDS * 1000 * 2) / 3);
  }

  onApplicationBootstrap(): void {
    this.lastTick = { mono: performance.now(), wall: Date.now() };
    this.timer = setInterval(() => void this.tick(), this.intervalMs);
    this.timer.unref();
  }

  onModuleDestroy(): void {
    if (this.timer) clearInterval(this.timer);
  }

  /**
   * The timer's callback: notices a pause of this process or a jump of the wall clock since the
   * last tick, and then sweeps. Measured on every tick, also while a slow sweep is still running.
   */
  async tick(): Promise<void> {
    const mono = performance.now();
    const wall = Date.now();
    const gapMs = mono - this.lastTick.mono;
    const jumpMs = wall - this.lastTick.wall - gapMs;
    this.lastTick = { mono, wall };
    if (gapMs > this.pauseThresholdMs || Math.abs(jumpMs) > Math.max(1_000, this.intervalMs)) {
      await this.afterPause(gapMs, jumpMs);
      return;
    }
    await this.sweep();
  }

  /**
   * Nobody could renew a lease while this process stood still, and its clock may have moved under
   * them: every active lease gets a fresh window from now (a lease plus an agent's reconnect
   * backoff, as after a restart: a long pause drops the agents' sockets), so it is judged on what its
   * agent sends from here on, its messages queued during the pause included.
   */
  async afterPause(gapMs: number, jumpMs: number): Promise<void> {
    const windowMs = this.config.AGENT_LEASE_SECONDS * 1000 + RunSweeper.RECONNECT_GRACE_MS;
    this.settleUntil = performance.now() + windowMs;
    const what =
      Math.abs(jumpMs) > Math.max(1_000, this.intervalMs)
        ? `the wall clock jumped ${(jumpMs / 1000).toFixed(1)} s`
        : `this process was paused for ${(gapMs / 1000).toFixed(1)} s`;
    try {
      const n = await this.repo.extendLeases(new Date(this.clock.now().getTime() + windowMs));
      this.logger.warn(
        `${what}: ${n} active lease(s) get a fresh ${windowMs / 1000} s window before they are judged`,
      );
    } catch (err) {
      this.logger.error(`extending leases after a pause failed: ${(err as Error).stack ?? err}`);
    }
  }

  async sweep(): Promise<void> {
    if (this.sweeping) return;
    this.sweeping = true;
    try {
      // Read what the agents' sockets hold before judging them on it.
      await new Promise((r) => setImmediate(r));
      const now = this.clock.now();
      const leaseMs = this.config.AGENT_LEASE_SECONDS * 1000;
      const judgeLeases = Date.now() - this.bootedAt >= leaseMs + RunSweeper.RECONNECT_GRACE_MS;
      for (const { id, agentId, leaseExpiresAt } of judgeLeases ? await this.repo.expiredLeases(now) : []) {
        const heardAgo = this.connections.heardAgo(id, agentId);
        if (heardAgo !== null && heardAgo <= leaseMs) {
          // Its agent said it holds the run within the lease (a batch, or a heartbeat still being
          // processed): the lease runs from that message, not from now, so an agent that died right
          // after a batch still fails one lease after its last word (not nearly two).
          await this.lifecycle.renewLeases(
            agentId,
            [id],
            new Date(this.clock.now().getTime() + leaseMs - heardAgo),
          );
          continue;
        }
        // What was waited: since the agent's last message here, or (heard on another replica, or
        // not since this process started) since the lease's last renewal.
        const sinceRenewal = now.getTime() - (leaseExpiresAt?.getTime() ?? now.getTime()) + leaseMs;
        const silentMs = Math.max(heardAgo ?? 0, sinceRenewal);
        const failed = await this.lifecycle.failForLostLease(
          id,
          agentId,
          `nothing heard from the agent for ${(silentMs / 1000).toFixed(1)} s (the lease is ${this.config.AGENT_LEASE_SECONDS} s)`,
          { lapsed: true },
        );
        if (failed)
          this.logger.warn(`run ${id} failed: agent ${agentId} missed its lease`, forRun(id, { agentId }));
      }
      if (performance.now() < this.settleUntil) return;
      const cutoff = new Date(now.getTime() - this.config.DEADLINE_GRACE_SECONDS * 1000);
      for (const id of await this.repo.overdue(cutoff)) {
        if (await this.lifecycle.failForDeadline(id))
          this.logger.warn(`run ${id} stopped at its whole-run deadline`, forRun(id));
      }
    } catch (err) {
      this.logger.error(`sweep failed: ${(err as Error).stack ?? err}`);
    } finally {
      this.sweeping = false;
    }
  }
}
