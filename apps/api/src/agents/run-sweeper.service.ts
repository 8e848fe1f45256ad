import { Inject, Injectable, Logger, OnApplicationBootstrap, OnModuleDestroy } from '@nestjs/common';
import { Clock } from '../common/clock';
import { CONFIG, Config } from '../config/config';
import { RunLifecycleService } from '../runs/run-lifecycle.service';
import { AgentsRepository } from './agents.repository';

/**
 * Enforces leases and whole-run deadlines from the server side, whether or not any agent reports:
 * a run whose agent stopped renewing its lease fails as infra_error (it is never handed to a second
 * agent, so it can never execute twice at once); a run past its deadline (plus a short grace for the
 * agent's own verdict to land) is stopped by the lifecycle. Every replica sweeps; the lifecycle's
 * transitions are conditional, so two sweepers never apply the same outcome twice.
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

  constructor(
    private readonly repo: AgentsRepository,
    private readonly lifecycle: RunLifecycleService,
    private readonly clock: Clock,
    @Inject(CONFIG) private readonly config: Config,
  ) {}

  get intervalMs(): number {
    // A quarter of the lease, between 250 ms (tests use second-long leases) and 5 s.
    return Math.min(5_000, Math.max(250, (this.config.AGENT_LEASE_SECONDS * 1000) / 4));
  }

  onApplicationBootstrap(): void {
    this.timer = setInterval(() => void this.sweep(), this.intervalMs);
    this.timer.unref();
  }

  onModuleDestroy(): void {
    if (this.timer) clearInterval(this.timer);
  }

  async sweep(): Promise<void> {
    if (this.sweeping) return;
    this.sweeping = true;
    try {
      const now = this.clock.now();
      const judgeLeases = Date.now() - this.bootedAt >= this.config.AGENT_LEASE_SECONDS * 1000 + 6_000;
      for (const { id, agentId } of judgeLeases ? await this.repo.expiredLeases(now) : []) {
        const failed = await this.lifecycle.failForLostLease(
          id,
          agentId,
          `no heartbeat for ${this.config.AGENT_LEASE_SECONDS} s`,
        );
        if (failed) this.logger.warn(`run ${id} failed: agent ${agentId} missed its lease`);
      }
      const cutoff = new Date(now.getTime() - this.config.DEADLINE_GRACE_SECONDS * 1000);
      for (const id of await this.repo.overdue(cutoff)) {
        if (await this.lifecycle.failForDeadline(id))
          this.logger.warn(`run ${id} stopped at its whole-run deadline`);
      }
    } catch (err) {
      this.logger.error(`sweep failed: ${(err as Error).stack ?? err}`);
    } finally {
      this.sweeping = false;
    }
  }
}
