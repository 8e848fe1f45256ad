import { Inject, Injectable, Logger, OnApplicationBootstrap, OnModuleDestroy } from '@nestjs/common';
import { agentFits, baselineKey, RunAssign, RunAssignAck } from '@dryft/libs';
import type { AgentCapabilities, HarnessSpec, RunKindMode } from '@dryft/libs';
import { hashToken } from '@dryft/libs/node';
import { randomBytes } from 'node:crypto';
import { BenchmarkRegistry } from '../benchmarks/benchmark-registry';
import { Clock } from '../common/clock';
import { EventBus } from '../common/event-bus';
import { CONFIG, Config } from '../config/config';
import { SocketServer } from '../socket/socket-server';
import type { RunEntity } from '../runs/run.entity';
import { ActiveRunRow, RunQueue } from '../runs/run-queue';
import { RunsRepository } from '../runs/runs.repository';
import { RunsService } from '../runs/runs.service';
import { AgentConnections, LocalAgent } from './agent-connections';
import { AgentsRepository } from './agents.repository';

/** Cross-replica nudge: "a run was queued somewhere, try your agents". */
export const DISPATCH_SIGNAL = 'dryft:dispatch';
const ASSIGN_ACK_MS = 10_000;
/** A safety net only: dispatch is pushed on queue and on slot release; this catches a lost nudge. */
const FALLBACK_PASS_MS = 5_000;

/** Whether an agent's hardware and declared benchmarks fit a benchmark definition (shared with the run views). */
export { agentFits };

/** The GPUs a slot owns; CPU slots share the machine, which counts as one resource. */
function resources(slot: { gpus: string[] }): string[] {
  return slot.gpus.length > 0 ? slot.gpus.map((g) => `gpu:${g}`) : ['cpu'];
}

/**
 * Which modes a free slot may take, given what runs on the agent: an official run (or a baseline
 * re-measure, which is timed the same way) never shares a GPU (or, on a CPU agent, the machine)
 * with another run, so timings are not disturbed. `allowOfficial` admits both.
 */
export function slotModes(
  slot: { index: number; gpus: string[] },
  slots: { index: number; gpus: string[] }[],
  active: { slot: number | null; mode: RunKindMode }[],
): { allowPublic: boolean; allowOfficial: boolean } {
  const mine = new Set(resources(slot));
  const overlapping = active.filter((r) => {
    const other = slots.find((s) => s.index === r.slot);
    return other ? resources(other).some((x) => mine.has(x)) : false;
  });
  return {
    allowPublic: !overlapping.some((r) => r.mode !== 'public'),
    allowOfficial: overlapping.length === 0,
  };
}

/**
 * Pushes queued runs to idle slots of the agents connected to this process. A pass runs when a run
 * is queued (here or, through the adapter, on another replica), when a slot frees, when an agent
 * becomes ready or stops draining; passes never overlap within a process, and `FOR UPDATE SKIP
 * LOCKED` arbitrates between processes.
 */
@Injectable()
export class Dispatcher implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger('Dispatch');
  private running = false;
  private again = false;
  private timer?: NodeJS.Timeout;
  private readonly unsubscribe: (() => void)[] = [];

  constructor(
    private readonly repo: AgentsRepository,
    private readonly queue: RunQueue,
    private readonly runsRepo: RunsRepository,
    private readonly registry: BenchmarkRegistry,
    private readonly connections: AgentConnections,
    private readonly sockets: SocketServer,
    private readonly runs: RunsService,
    private readonly clock: Clock,
    private readonly bus: EventBus,
    @Inject(CONFIG) private readonly config: Config,
  ) {}

  onApplicationBootstrap(): void {
    this.unsubscribe.push(
      this.bus.on('run.queued', () => this.kick({ everywhere: true })),
      this.bus.on('run.finished', () => this.kick({ everywhere: true })),
    );
    this.sockets.io.of('/agents').on(DISPATCH_SIGNAL, () => this.kick({ everywhere: false }));
    this.timer = setInterval(() => this.kick({ everywhere: false }), FALLBACK_PASS_MS);
    this.timer.unref();
  }

  onModuleDestroy(): void {
    if (this.timer) clearInterval(this.timer);
    for (const u of this.unsubscribe) u();
  }

  /** Starts a pass (or queues one more after the current pass); `everywhere` nudges the other replicas too. */
  kick(opts: { everywhere: boolean }): void {
    if (opts.everywhere && this.sockets.clustered) {
      try {
        this.sockets.io.of('/agents').serverSideEmit(DISPATCH_SIGNAL);
      } catch (err) {
        this.logger.warn(`could not nudge other replicas: ${(err as Error).message}`);
      }
    }
    if (this.running) {
      this.again = true;
      return;
    }
    this.running = true;
    void this.loop();
  }

  private async loop(): Promise<void> {
    try {
      do {
        this.again = false;
        await this.pass();
      } while (this.again);
    } catch (err) {
      this.logger.error(`dispatch pass failed: ${(err as Error).stack ?? err}`);
    } finally {
      this.running = false;
    }
  }

  private async pass(): Promise<void> {
    let agents = this.connections.all().filter((a) => !a.draining && a.coolDownUntil <= Date.now());
    if (agents.length === 0) return;
    const queued = new Set(await this.queue.queuedBenchmarks());
    if (queued.size === 0) return;
    // Draining and revocation are decided in the database (an organizer's call may land on another replica).
    const unavailable = new Set(await this.repo.unavailableAgentIds(agents.map((a) => a.agentId)));
    agents = agents.filter((a) => !unavailable.has(a.agentId));
    const active = await this.queue.activeRunsByAgent(agents.map((a) => a.agentId));
    for (const agent of agents) {
      const benchmarkIds = this.registry
        .all()
        .filter((d) => queued.has(d.id) && agentFits(d, agent.capabilities))
        .map((d) => d.id);
      if (benchmarkIds.length === 0) continue;
      const mine: Pick<ActiveRunRow, 'slot' | 'mode'>[] = active.filter((r) => r.agentId === agent.agentId);
      for (const slot of agent.slots) {
        if (mine.some((r) => r.slot === slot.index)) continue;
        const { allowPublic, allowOfficial } = slotModes(slot, agent.slots, mine);
        const token = randomBytes(32).toString('base64url');
        const now = this.clock.now();
        const run = await this.queue.markAssigned({
          agentId: agent.agentId,
          agentName: agent.name,
          slot: slot.index,
          benchmarkIds,
          allowOfficial,
          allowPublic,
          hardware: baselineKey(agent.capabilities.gpuModel ?? 'cpu'),
          downloadTokenHash: hashToken(token),
          now,
          leaseUntil: new Date(now.getTime() + this.config.AGENT_LEASE_SECONDS * 1000),
        });
        if (!run) continue;
        mine.push({ slot: slot.index, mode: run.mode });
        // The assignment travels on its own: a slow ack must not hold up the other slots.
        void this.assign(agent, run, token);
      }
    }
  }

  private async assign(agent: LocalAgent, run: RunEntity, token: string): Promise<void> {
    try {
      this.bus.emit('run.status', { run: await this.runs.view(run) });
      const payload = RunAssign.parse({
        runId: run.id,
        benchmarkId: run.benchmarkId,
        mode: run.mode,
        slot: run.slot,
        submission: await this.submissionRef(run, token),
        spec: await this.specFor(run, agent.capabilities),
        deadlineAt: run.deadlineAt!.getTime(),
        logs: this.registry.get(run.benchmarkId)?.logs,
      });
      const raw: unknown = await agent.socket.timeout(ASSIGN_ACK_MS).emitWithAck('run.assign', payload);
      const ack = RunAssignAck.safeParse(raw);
      if (ack.success && ack.data.accepted) return;
      const reason = ack.success ? (ack.data.reason ?? 'refused') : 'malformed ack';
      this.logger.warn(`agent ${agent.name} refused run ${run.id}: ${reason}`);
      await this.giveBack(agent, run);
    } catch (err) {
      this.logger.warn(`run ${run.id} not delivered to agent ${agent.name}: ${(err as Error).message}`);
      await this.giveBack(agent, run);
    }
  }

  /** An assignment that was refused or never acknowledged goes back to the queue (it never started). */
  private async giveBack(agent: LocalAgent, run: RunEntity): Promise<void> {
    agent.coolDownUntil = Date.now() + 2_000;
    if (await this.queue.requeue(run.id, agent.agentId)) {
      const fresh = await this.runs.viewById(run.id);
      if (fresh) this.bus.emit('run.status', { run: fresh });
      setTimeout(() => this.kick({ everywhere: true }), 2_100).unref();
    }
  }

  private async submissionRef(run: RunEntity, token: string) {
    if (run.submissionId === null) return null; // a baseline re-measure: nothing to download
    const submission = await this.repo.findSubmission(run.submissionId);
    if (!submission) throw new Error(`submission ${run.submissionId} of run ${run.id} is missing`);
    return {
      url: `/api/agent/downloads/${token}`,
      sha256: submission.sha256,
      kind: submission.kind,
      filename: submission.kind === 'file' ? 'submission.py' : 'submission.tar.gz',
    };
  }

  /** The stored spec, with the cached baseline for this hardware when one was measured. */
  private async specFor(run: RunEntity, caps: AgentCapabilities): Promise<HarnessSpec> {
    const spec = run.spec;
    // A baseline re-measure measures the baseline itself: it is never handed the cache.
    if (spec.kind !== 'decode' || spec.mode === 'baseline') return spec;
    const hardware = baselineKey(caps.gpuModel ?? 'cpu');
    const baseline = await this.runsRepo.findBaseline(run.benchmarkId, hardware, run.rulesVersion);
    return { ...spec, baseline: baseline ?? spec.baseline ?? null };
  }
}
