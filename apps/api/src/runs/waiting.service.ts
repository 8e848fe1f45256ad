import { Inject, Injectable } from '@nestjs/common';
import {
  agentFits,
  agentHardware,
  type AgentCapabilities,
  type BenchmarkDefinition,
  cannotRunReason,
  estimateStartSeconds,
  hardwareFits,
  hardwareNeeds,
  type QueueSummary,
  type RunWaiting,
} from '@dryft/libs';
import { BenchmarkRegistry } from '../benchmarks/benchmark-registry';
import { Clock } from '../common/clock';
import { CONFIG, Config } from '../config/config';
import type { RunEntity } from './run.entity';
import { AgentRow, DurationKey, durationKey, RunsRepository } from './runs.repository';

/** A run in progress on an agent's slot, since when. */
type ActiveRun = Awaited<ReturnType<RunsRepository['activeOn']>>[number];

/** Recent runs needed before the estimate stops being called a guess. */
const MIN_SAMPLES = 3;

interface Capacity {
  /** Online, non-draining agents that can run the benchmark. */
  capable: AgentRow[];
  capableSlots: number;
  busySlots: number;
  /** Per capable slot: seconds until free. */
  slotFreeIn: number[];
  reason: (position: number) => string;
  lastCapableSeenAt: Date | null;
}

/**
 * Why a queued run waits, in words, and when it will probably start: from the agents online, what
 * they run now, and the durations of recent runs of the same benchmark (tier and mode).
 */
@Injectable()
export class WaitingService {
  constructor(
    private readonly runs: RunsRepository,
    private readonly registry: BenchmarkRegistry,
    private readonly clock: Clock,
    @Inject(CONFIG) private readonly config: Config,
  ) {}

  async forRun(run: RunEntity, position: number): Promise<RunWaiting | null> {
    return (await this.forRuns([{ run, position }]))[0];
  }

  /**
   * {@link forRun} for each queued run of a page, in the same few queries however many there are:
   * the agents, the recent durations of every benchmark, tier and mode asked for, and the runs in
   * progress on the agents that could take them.
   */
  async forRuns(queued: { run: RunEntity; position: number }[]): Promise<(RunWaiting | null)[]> {
    const asked = queued.map(({ run, position }) => {
      const def = this.registry.get(run.benchmarkId);
      return def && run.status === 'queued' ? { run, position, def } : null;
    });
    const waiting = asked.filter((x) => x !== null);
    if (waiting.length === 0) return asked.map(() => null);
    const agents = await this.runs.agentsForCapacity();
    const keys = new Map<string, DurationKey>();
    for (const { run } of waiting) {
      const key = { benchmarkId: run.benchmarkId, tier: run.tier, mode: run.mode };
      keys.set(durationKey(key), key);
    }
    const durationsOf = await this.runs.recentDurations([...keys.values()]);
    const active = await this.activeOnAvailable(agents);
    const now = this.clock.now().getTime();
    return asked.map((x) => {
      if (!x) return null;
      const { run, position, def } = x;
      const durations = durationsOf.get(
        durationKey({ benchmarkId: run.benchmarkId, tier: run.tier, mode: run.mode }),
      )!;
      const runSeconds = median(durations) ?? guessSeconds(def, run.tier);
      const cap = this.capacity(def, agents, runSeconds, active);
      const since = Math.max(cap.lastCapableSeenAt?.getTime() ?? 0, run.createdAt.getTime());
      return {
        reason: cap.reason(position),
        capableAgents: cap.capable.length,
        capableSlots: cap.capableSlots,
        busySlots: cap.busySlots,
        position,
        etaSeconds: estimateStartSeconds({ position, slotFreeIn: cap.slotFreeIn, runSeconds }),
        etaIsGuess: durations.length < MIN_SAMPLES || cap.capable.length === 0,
        lastCapableSeenAt: cap.lastCapableSeenAt?.toISOString() ?? null,
        suggestCancel: cap.capable.length === 0 && now - since >= def.noCapableAgentHintSeconds * 1000,
      };
    });
  }

  /** Runs waiting per benchmark and the capacity that could take them (organizer's agents page). */
  async queue(): Promise<QueueSummary[]> {
    const agents = await this.runs.agentsForCapacity();
    const queued = await this.runs.queuedPerBenchmark();
    const active = await this.activeOnAvailable(agents);
    const out: QueueSummary[] = [];
    for (const def of this.registry.all()) {
      const q = queued.find((x) => x.benchmarkId === def.id);
      const cap = this.capacity(def, agents, guessSeconds(def, null), active);
      out.push({
        benchmarkId: def.id,
        title: def.title,
        queued: q?.count ?? 0,
        capableAgents: cap.capable.length,
        capableSlots: cap.capableSlots,
        busySlots: cap.busySlots,
        reason: cap.reason(1),
        oldestQueuedAt: q?.oldest.toISOString() ?? null,
      });
    }
    return out;
  }

  private online(a: AgentRow): boolean {
    const fresh =
      a.lastHeartbeatAt !== null &&
      this.clock.now().getTime() - a.lastHeartbeatAt.getTime() <= this.config.AGENT_LEASE_SECONDS * 1000;
    return a.connected && fresh && a.capabilities !== null;
  }

  /**
   * The runs in progress on every agent that could take a run of some benchmark (online, not
   * draining): {@link capacity} reads those of the agents that can take its benchmark.
   */
  private activeOnAvailable(agents: AgentRow[]): Promise<ActiveRun[]> {
    return this.runs.activeOn(agents.filter((a) => this.online(a) && !a.draining).map((a) => a.id));
  }

  private capacity(
    def: BenchmarkDefinition,
    agents: AgentRow[],
    runSeconds: number,
    active: ActiveRun[],
  ): Capacity {
    const online = agents.filter((a) => this.online(a));
    const fits = (a: AgentRow) => a.capabilities !== null && agentFits(def, a.capabilities);
    const capable = online.filter((a) => !a.draining && fits(a));
    const lastCapableSeenAt = agents
      .filter(fits)
      .map((a) => a.lastHeartbeatAt)
      .filter((d): d is Date => d !== null)
      .reduce<Date | null>((m, d) => (m === null || d > m ? d : m), null);
    const now = this.clock.now().getTime();
    const slotFreeIn: number[] = [];
    let busySlots = 0;
    for (const agent of capable) {
      for (const slot of agent.slots) {
        const run = active.find((r) => r.agentId === agent.id && r.slot === slot.index);
        if (run) {
          busySlots += 1;
          const elapsed = (now - run.since.getTime()) / 1000;
          slotFreeIn.push(Math.max(5, runSeconds - elapsed));
        } else slotFreeIn.push(0);
      }
    }
    const needs = hardwareNeeds(def);
    const reason = (position: number): string => {
      const line = position > 1 ? ` #${position} in line.` : ' It is next in line.';
      if (capable.length > 0) {
        const slots = slotFreeIn.length;
        if (busySlots >= slots)
          return `All ${slots} slot${slots === 1 ? '' : 's'} that can run ${def.id} ${slots === 1 ? 'is' : 'are'} busy (${capable.map((a) => a.name).join(', ')}).${line}`;
        return `A slot that can run ${def.id} is free on ${capable.map((a) => a.name).join(', ')}: the run should start in moments.${line}`;
      }
      const parts = [`No online agent can run ${def.id}: it needs ${needs}`];
      if (online.length === 0) parts.push('no agent is online');
      else
        parts.push(
          `the agents online have: ${[...new Set(online.map((a) => agentHardware(a.capabilities!)))].join(', ')}`,
        );
      const sentences = [`${parts.join('; ')}.`];
      for (const a of online) {
        if (!hardwareFits(def, a.capabilities!)) continue;
        if (a.draining) sentences.push(`Agent ${a.name} has the hardware but is draining.`);
        const why = cannotRunReason(def, a.capabilities as AgentCapabilities);
        if (why) sentences.push(`Agent ${a.name} has the hardware but cannot run it: ${why}`);
      }
      return sentences.join(' ');
    };
    return {
      capable,
      capableSlots: slotFreeIn.length,
      busySlots,
      slotFreeIn,
      reason,
      lastCapableSeenAt,
    };
  }
}

function median(xs: number[]): number | null {
  if (xs.length === 0) return null;
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? s[mid] : (s[mid - 1] + s[mid]) / 2;
}

/** With no recent runs: the tier's training and evaluation budgets, or a share of the run limit. */
function guessSeconds(def: BenchmarkDefinition, tier: string | null): number {
  if (def.kind === 'training') {
    const t = def.tiers.find((x) => x.id === tier) ?? def.tiers[0];
    return t.trainingSeconds + t.evalSeconds + 30;
  }
  return Math.min(def.runTimeLimitSeconds, 600);
}
