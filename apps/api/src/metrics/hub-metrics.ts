import { Inject, Injectable, Logger, OnModuleDestroy, OnModuleInit } from '@nestjs/common';
import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import { notFound } from '../common/errors';
import { collectDefaultMetricsButGc } from './default-metrics';
import { baselineKey, type RunView } from '@dryft/libs';
import { DataSource } from 'typeorm';
import { BenchmarkRegistry } from '../benchmarks/benchmark-registry';
import { Clock } from '../common/clock';
import { EventBus } from '../common/event-bus';
import { CONFIG, Config } from '../config/config';
import { SocketServer } from '../socket/socket-server';
import { ActiveRunGroup, AgentRow, MetricsRepository } from './metrics.repository';

/** What pg-pool says of itself. */
interface PoolCounts {
  totalCount: number;
  idleCount: number;
  waitingCount: number;
  options?: { max?: number };
}

/** Seconds: a queued run waits from seconds (an idle fleet) to hours (a busy event). */
const WAIT_BUCKETS = [1, 5, 15, 30, 60, 120, 300, 600, 1_800, 3_600, 7_200];
/** Seconds: a decode run takes from seconds (toy) to the organizer's whole-run limit. */
const RUN_BUCKETS = [5, 15, 30, 60, 120, 300, 600, 900, 1_800, 3_600];
/** GPU seconds per candidate-timed second: 1 would be all candidate timing; the paired reference adds its own. */
const GPU_PER_TIMED_BUCKETS = [1, 1.5, 2, 2.5, 3, 4, 5, 7.5, 10, 20, 50, 100];
/** Seconds: a log batch is stored in about a millisecond, slower under lock contention. */
const BATCH_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1];

/**
 * This replica's Prometheus metrics. Counters and histograms follow the event bus (runs finished,
 * log lines stored, batches handled: each counted by the replica that handled it, so Prometheus sums
 * them over replicas); the gauges that live in the database (queue, runs in flight, agents and
 * slots) are read when scraped, two queries per scrape, the same on every replica (take max(), not
 * sum()). Sockets, rooms and the database pool are this replica's own. prom-client's default
 * metrics add the event loop's lag, memory and CPU.
 */
@Injectable()
export class HubMetrics implements OnModuleInit, OnModuleDestroy {
  private readonly logger = new Logger('Metrics');
  /** Its own registry: tests start several hubs in one process. */
  readonly registry = new Registry();
  private readonly unsubscribe: (() => void)[] = [];
  private reads?: Promise<{ runs: ActiveRunGroup[]; agents: AgentRow[] }>;
  private scrapes = 0;
  /** Label sets seen once: a queue that empties reads 0 instead of vanishing. */
  private readonly queueKeys = new Set<string>();
  private readonly runKeys = new Set<string>();

  private readonly runsFinished = new Counter({
    name: 'dryft_runs_finished_total',
    help: 'Runs that reached a final state on this replica, by benchmark, mode, status and failure code (verdict)',
    labelNames: ['benchmark', 'mode', 'status', 'failure_code'] as const,
    registers: [this.registry],
  });
  private readonly runDuration = new Histogram({
    name: 'dryft_run_duration_seconds',
    help: 'From a run starting on its agent to its final state (observed when it ends)',
    labelNames: ['benchmark', 'mode', 'status'] as const,
    buckets: RUN_BUCKETS,
    registers: [this.registry],
  });
  private readonly waitDuration = new Histogram({
    name: 'dryft_run_wait_seconds',
    help: 'From a run being queued to an agent taking it (observed when the run ends)',
    labelNames: ['benchmark', 'mode'] as const,
    buckets: WAIT_BUCKETS,
    registers: [this.registry],
  });
  private readonly linesStored = new Counter({
    name: 'dryft_log_lines_stored_total',
    help: 'Run log lines stored by this replica (rate() gives lines per second)',
    registers: [this.registry],
  });
  private readonly batchSeconds = new Histogram({
    name: 'dryft_log_batch_seconds',
    help: 'Time this replica took to handle one agent batch (store, acknowledge or refuse)',
    buckets: BATCH_BUCKETS,
    registers: [this.registry],
  });

  private readonly officialGpuSeconds = new Histogram({
    name: 'dryft_official_run_gpu_seconds',
    help: 'GPU seconds a finished official run held its slot (assigned to final state), by benchmark, GPU hardware key and status',
    labelNames: ['benchmark', 'hardware', 'status'] as const,
    buckets: RUN_BUCKETS,
    registers: [this.registry],
  });
  private readonly candidateTimedSeconds = new Counter({
    name: 'dryft_official_candidate_timed_seconds_total',
    help: "The candidate's own timed seconds (its timed samples' totalMs, warm-ups excluded) of finished official runs on a GPU; dryft_official_run_gpu_seconds_sum over this is GPU seconds per candidate-timed second",
    labelNames: ['benchmark', 'hardware'] as const,
    registers: [this.registry],
  });
  private readonly gpuPerTimedSecond = new Histogram({
    name: 'dryft_official_run_gpu_seconds_per_candidate_second',
    help: "Per finished official run on a GPU with timed samples: GPU seconds held over the candidate's own timed seconds (loads, warm-ups, the reference's half of the pairs and checks are the rest)",
    labelNames: ['benchmark', 'hardware'] as const,
    buckets: GPU_PER_TIMED_BUCKETS,
    registers: [this.registry],
  });

  constructor(
    private readonly bus: EventBus,
    private readonly repo: MetricsRepository,
    private readonly dataSource: DataSource,
    private readonly sockets: SocketServer,
    private readonly clock: Clock,
    private readonly benchmarks: BenchmarkRegistry,
    @Inject(CONFIG) private readonly config: Config,
  ) {
    if (!config.METRICS_ENABLED) return;
    collectDefaultMetricsButGc(this.registry);
    this.defineDatabaseGauges();
    this.defineProcessGauges();
  }

  /** METRICS_ENABLED: false collects nothing and serves nothing. */
  get enabled(): boolean {
    return this.config.METRICS_ENABLED;
  }

  onModuleInit(): void {
    if (!this.enabled) return;
    this.unsubscribe.push(
      this.bus.on('run.finished', ({ run }) => this.runEnded(run)),
      this.bus.on('run.logs', ({ lines }) => this.linesStored.inc(lines.length)),
      this.bus.on('run.batch_handled', ({ seconds }) => this.batchSeconds.observe(seconds)),
    );
  }

  onModuleDestroy(): void {
    for (const off of this.unsubscribe.splice(0)) off();
  }

  /** The Prometheus text exposition of every metric. */
  async text(): Promise<string> {
    if (!this.enabled)
      throw notFound(
        'metrics_disabled',
        'This hub collects no metrics (METRICS_ENABLED=false); set it to true and restart to read them.',
      );
    this.scrapes += 1;
    try {
      return await this.registry.metrics();
    } finally {
      this.scrapes -= 1;
      if (this.scrapes === 0) this.reads = undefined;
    }
  }

  get contentType(): string {
    return this.registry.contentType;
  }

  private runEnded(run: RunView): void {
    this.runsFinished.inc({
      benchmark: run.benchmarkId,
      mode: run.mode,
      status: run.status,
      failure_code: run.failureCode ?? '',
    });
    const end = run.finishedAt ? Date.parse(run.finishedAt) : this.clock.now().getTime();
    if (run.startedAt)
      this.runDuration.observe(
        { benchmark: run.benchmarkId, mode: run.mode, status: run.status },
        Math.max(0, end - Date.parse(run.startedAt)) / 1000,
      );
    if (run.assignedAt)
      this.waitDuration.observe(
        { benchmark: run.benchmarkId, mode: run.mode },
        Math.max(0, Date.parse(run.assignedAt) - Date.parse(run.createdAt)) / 1000,
      );
    if (run.mode === 'official' && run.assignedAt)
      void this.officialRunCost(run, end).catch((err: Error) =>
        this.logger.warn(`GPU seconds of run ${run.id}: ${err.message}`),
      );
  }

  /**
   * What a finished official run on a GPU cost: the GPU seconds its slot was held (assigned to
   * final state: loads, warm-ups, reference and candidate) and, against the candidate's own timed
   * seconds, how much of that the candidate's measured time was. A run on a CPU agent is left out.
   */
  private async officialRunCost(run: RunView, end: number): Promise<void> {
    const cost = await this.repo.officialRunCost(run.id);
    if (!cost?.gpuModel) return;
    const hardware = baselineKey(cost.gpuModel);
    if (hardware === 'cpu') return;
    const gpuSeconds = Math.max(0, end - Date.parse(run.assignedAt!)) / 1000;
    this.officialGpuSeconds.observe({ benchmark: run.benchmarkId, hardware, status: run.status }, gpuSeconds);
    const timedSeconds = cost.candidateTimedMs / 1000;
    this.candidateTimedSeconds.inc({ benchmark: run.benchmarkId, hardware }, timedSeconds);
    if (timedSeconds > 0)
      this.gpuPerTimedSecond.observe({ benchmark: run.benchmarkId, hardware }, gpuSeconds / timedSeconds);
  }

  /**
   * One pair of reads per scrape, shared by every gauge below (and by scrapes that overlap it);
   * the next scrape reads afresh.
   */
  private read() {
    if (!this.reads) {
      this.reads = Promise.all([this.repo.activeRuns(), this.repo.agents()]).then(([runs, agents]) => ({
        runs,
        agents,
      }));
    }
    return this.reads;
  }

  private defineDatabaseGauges(): void {
    // collect() runs with `this` bound to its gauge: the hub's side is reached through these.
    const read = () => this.read();
    const agentStatus = (a: AgentRow) => this.agentStatus(a);
    const now = () => this.clock.now().getTime();
    const registers = [this.registry];
    const queueKeys = this.queueKeys;
    for (const b of this.benchmarks.all()) queueKeys.add(`${b.id}\u0000any`);
    new Gauge({
      name: 'dryft_queue_depth',
      help: 'Runs waiting in the queue, by benchmark and hardware key (any: no key required)',
      labelNames: ['benchmark', 'hardware'] as const,
      registers,
      async collect() {
        const { runs } = await read();
        const counts = new Map<string, number>();
        for (const r of runs.filter((g) => g.status === 'queued')) {
          const key = `${r.benchmark}\u0000${r.hardware}`;
          queueKeys.add(key);
          counts.set(key, (counts.get(key) ?? 0) + r.count);
        }
        for (const key of queueKeys) {
          const [benchmark, hardware] = key.split('\u0000');
          this.set({ benchmark, hardware }, counts.get(key) ?? 0);
        }
      },
    });
    new Gauge({
      name: 'dryft_queue_oldest_age_seconds',
      help: 'Age of the oldest queued run, by benchmark and hardware key (0: none queued)',
      labelNames: ['benchmark', 'hardware'] as const,
      registers,
      async collect() {
        const { runs } = await read();
        const at = now();
        const oldest = new Map<string, number>();
        for (const r of runs.filter((g) => g.status === 'queued')) {
          const key = `${r.benchmark}\u0000${r.hardware}`;
          oldest.set(key, Math.min(oldest.get(key) ?? Infinity, r.oldestCreatedAt.getTime()));
        }
        for (const key of queueKeys) {
          const [benchmark, hardware] = key.split('\u0000');
          const oldestAt = oldest.get(key);
          this.set({ benchmark, hardware }, oldestAt === undefined ? 0 : Math.max(0, at - oldestAt) / 1000);
        }
      },
    });
    const runKeys = this.runKeys;
    new Gauge({
      name: 'dryft_runs_active',
      help: 'Unfinished runs by benchmark, mode and status (queued, assigned, running)',
      labelNames: ['benchmark', 'mode', 'status'] as const,
      registers,
      async collect() {
        const { runs } = await read();
        const counts = new Map<string, number>();
        for (const r of runs) {
          const key = `${r.benchmark}\u0000${r.mode}\u0000${r.status}`;
          runKeys.add(key);
          counts.set(key, (counts.get(key) ?? 0) + r.count);
        }
        for (const key of runKeys) {
          const [benchmark, mode, status] = key.split('\u0000');
          this.set({ benchmark, mode, status }, counts.get(key) ?? 0);
        }
      },
    });
    new Gauge({
      name: 'dryft_agents',
      help: 'Agents that are not revoked, by status (online, draining, offline: as the organizer list shows them)',
      labelNames: ['status'] as const,
      registers,
      async collect() {
        const { agents } = await read();
        const by = { online: 0, draining: 0, offline: 0 };
        for (const a of agents) by[agentStatus(a)] += 1;
        for (const [status, n] of Object.entries(by)) this.set({ status }, n);
      },
    });
    new Gauge({
      name: 'dryft_agent_slots',
      help: 'Slots of connected agents: online (taking runs), busy (running one, draining agents included), draining',
      labelNames: ['state'] as const,
      registers,
      async collect() {
        const { agents } = await read();
        const by = { online: 0, busy: 0, draining: 0 };
        for (const a of agents) {
          const status = agentStatus(a);
          if (status === 'offline') continue;
          by[status] += a.slots;
          by.busy += Math.min(a.busySlots, a.slots);
        }
        for (const [state, n] of Object.entries(by)) this.set({ state }, n);
      },
    });
  }

  /** The organizer list's rule (agents.service.ts): connected with a heartbeat inside the lease. */
  private agentStatus(a: AgentRow): 'online' | 'draining' | 'offline' {
    const fresh =
      a.lastHeartbeatAt !== null &&
      this.clock.now().getTime() - a.lastHeartbeatAt.getTime() <= this.config.AGENT_LEASE_SECONDS * 1000;
    if (!(a.connected && fresh)) return 'offline';
    return a.draining ? 'draining' : 'online';
  }

  private defineProcessGauges(): void {
    const liveNamespace = () => this.liveNamespace();
    const pool = () => this.pool();
    const registers = [this.registry];
    new Gauge({
      name: 'dryft_live_sockets',
      help: '`/live` sockets connected to this replica',
      registers,
      collect() {
        this.set(liveNamespace()?.sockets.size ?? 0);
      },
    });
    new Gauge({
      name: 'dryft_live_rooms',
      help: '`/live` rooms with a member on this replica (runs, boards, teams followed; not each socket’s own room)',
      registers,
      collect() {
        const nsp = liveNamespace();
        let rooms = 0;
        if (nsp) for (const room of nsp.adapter.rooms.keys()) if (!nsp.sockets.has(room)) rooms += 1;
        this.set(rooms);
      },
    });
    new Gauge({
      name: 'dryft_db_pool_connections',
      help: "This replica's Postgres pool: connections in use and idle",
      labelNames: ['state'] as const,
      registers,
      collect() {
        const p = pool();
        this.set({ state: 'in_use' }, p ? p.totalCount - p.idleCount : 0);
        this.set({ state: 'idle' }, p?.idleCount ?? 0);
      },
    });
    new Gauge({
      name: 'dryft_db_pool_waiting',
      help: 'Queries of this replica waiting because every Postgres connection of its pool is busy',
      registers,
      collect() {
        const p = pool();
        // pg-pool queues every request for a tick, even one an idle connection takes at once: with
        // an idle connection nothing really waits.
        this.set(p && p.idleCount === 0 ? p.waitingCount : 0);
      },
    });
    new Gauge({
      name: 'dryft_db_pool_max',
      help: "The most Postgres connections this replica's pool opens",
      registers,
      collect() {
        this.set(pool()?.options?.max ?? 0);
      },
    });
  }

  private liveNamespace() {
    try {
      return this.sockets.live;
    } catch (err) {
      // Before the socket server started (or after it closed): nothing connected.
      this.logger.debug(`no /live namespace: ${(err as Error).message}`);
      return undefined;
    }
  }

  /** TypeORM's Postgres driver keeps its pg Pool as `master`. */
  private pool(): PoolCounts | undefined {
    return (this.dataSource.driver as unknown as { master?: PoolCounts }).master;
  }
}
