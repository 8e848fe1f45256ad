import { Inject, Injectable, Logger, OnApplicationBootstrap, OnModuleDestroy } from '@nestjs/common';
import { agentFits, baselineKey, RunAssign, RunAssignAck, runtimeMismatches } from '@dryft/libs';
import type { AgentCapabilities, HarnessSpec, RunKindMode } from '@dryft/libs';
import { hashToken } from '@dryft/libs/node';
import { randomBytes } from 'node:crypto';
import { BenchmarkRegistry } from '../benchmarks/benchmark-registry';
import { Clock } from '../common/clock';
import { EventBus } from '../common/event-bus';
import { CONFIG, Config } from '../config/config';
import type { RunEntity } from '../runs/run.entity';
import { ActiveRunRow, RunQueue } from '../runs/run-queue';
import { RunsRepository } from '../runs/runs.repository';
import { RunViews } from '../runs/run-views';
import { AgentConnections, LocalAgent } from './agent-connections';
import { AgentSockets } from './agent-sockets';
import { AgentsRepository } from './agents.repository';
import { forRun } from '../common/logging';

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
    private readonly agentSockets: AgentSockets,
    private readonly runs: RunViews,
    private readonly clock: Clock,
    private readonly bus: EventBus,
    @Inject(CONFIG) private readonly config: Config,
  ) {}

  onApplicationBootstrap(): void {
    this.unsubscribe.push(
      this.bus.on('run.queued', () => this.kick({ everywhere: true })),
      this.bus.on('run.finished', () => this.kick({ everywhere: true })),
    );
    this.agentSockets.onReplicaNudge(() => this.kick({ everywhere: false }));
    this.timer = setInterval(() => this.kick({ everywhere: false }), FALLBACK_PASS_MS);
    this.timer.unref();
  }

  onModuleDestroy(): void {
    if (this.timer) clearInterval(this.timer);
    for (const u of this.unsubscribe) u();
  }

  /** Starts a pass (or queues one more after the current pass); `everywhere` nudges the other replicas too. */
  kick(opts: { everywhere: boolean }): void {
    if (opts.everywhere && this.agentSockets.clustered) {
      try {
        this.agentSockets.nudgeReplicas();
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

  /**
   * What the run will execute with: the agent's reported runtime and how it differs from the
   * benchmark's pinned versions (shown on the run and to organizers). A failure to store it is
   * logged, never a reason to hold the run back.
   */
  private async recordRuntime(run: RunEntity, agent: LocalAgent): Promise<void> {
    const pins = this.registry.get(run.benchmarkId)?.runtimePins;
    const runtime = agent.capabilities.runtime ?? null;
    if (!pins && !runtime) return;
    try {
      await this.queue.recordRuntime(run, runtime, pins ? runtimeMismatches(pins, runtime) : null);
    } catch (err) {
      this.logger.warn(
        `run ${run.id}: its agent's runtime was not stored: ${(err as Error).message}`,
        forRun(run.id),
      );
    }
  }

  private async assign(agent: LocalAgent, run: RunEntity, token: string): Promise<void> {
    try {
      await this.recordRuntime(run, agent);
      this.bus.emit('run.status', { run: await this.runs.view(run) });
      const payload = RunAssign.parse({
        runId: run.id,
        benchmarkId: run.benchmarkId,
        mode: run.mode,
        slot: run.slot,
        teamId: run.teamId,
        submission: await this.submissionRef(run, token),
        spec: await this.specFor(run, agent.capabilities),
        deadlineAt: run.deadlineAt!.getTime(),
        logs: this.registry.get(run.benchmarkId)?.logs,
      });
      const raw: unknown = await this.agentSockets.assign(agent.socket, payload, ASSIGN_ACK_MS);
      const ack = RunAssignAck.safeParse(raw);
      if (ack.success && ack.data.accepted) return;
      const reason = ack.success ? (ack.data.reason ?? 'refused') : 'malformed ack';
      this.logger.warn(`agent ${agent.name} refused run ${run.id}: ${reason}`, forRun(run.id));
      await this.safeGiveBack(agent, run);
    } catch (err) {
      this.logger.warn(
        `run ${run.id} not delivered to agent ${agent.name}: ${(err as Error).message}`,
        forRun(run.id),
      );
      await this.safeGiveBack(agent, run);
    }
  }

  /**
   * giveBack for a fire-and-forget assignment: nobody awaits `assign`, so a failure here (the
   * database gone, as at shutdown) is logged instead of left as an unhandled rejection. The run
   * then stays assigned until its lease lapses and the sweeper gives it back (RELIABILITY.md).
   */
  private async safeGiveBack(agent: LocalAgent, run: RunEntity): Promise<void> {
    try {
      await this.giveBack(agent, run);
    } catch (err) {
      this.logger.warn(
        `run ${run.id} could not go back to the queue now (${(err as Error).message}); its lease will return it`,
        forRun(run.id),
      );
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
    if (run.submissionId === null) return null; // a re-measure or calibration: nothing to download
    const submission = await this.repo.findSubmission(run.submissionId);
    if (!submission) throw new Error(`submission ${run.submissionId} of run ${run.id} is missing`);
    return {
      url: `/api/agent/downloads/${token}`,
      sha256: submission.sha256,
      kind: submission.kind,
      filename: submission.kind === 'file' ? 'submission.py' : 'submission.tar.gz',
    };
  }

  /**
   * The stored spec, with what is known for this agent's hardware key under the run's rules
   * version: the cached baseline and (official and public runs) the pooled K, null when that key is
   * not calibrated (the harness then pairs with the baseline and says so). The reference engine is
   * the definition's. A re-measure or calibration measures those itself: it is handed neither.
   */
  private async specFor(run: RunEntity, caps: AgentCapabilities): Promise<HarnessSpec> {
    const spec = run.spec;
    if (spec.kind !== 'decode' || spec.mode === 'baseline' || spec.mode === 'calibration') return spec;
    const hardware = baselineKey(caps.gpuModel ?? 'cpu');
    const [baseline, calibration] = await Promise.all([
      this.runsRepo.findBaseline(run.benchmarkId, hardware, run.rulesVersion),
      this.runsRepo.findCalibration(run.benchmarkId, hardware, run.rulesVersion),
    ]);
    const def = this.registry.get(run.benchmarkId);
    return {
      ...spec,
      baseline: baseline ?? spec.baseline ?? null,
      referenceEngine: def?.kind === 'decode' ? def.referenceEngine : (spec.referenceEngine ?? null),
      calibration: calibration?.k ?? null,
    };
  }
}
