import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { io, Socket } from 'socket.io-client';
import { parse as parseYaml } from 'yaml';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { BenchmarkDefinition } from '@dryft/libs';
import { loadBenchmarkDefinitions } from '@dryft/libs/node';
import type { Hub } from '../../apps/api/src/bootstrap';
import { HubMetrics } from '../../apps/api/src/metrics/hub-metrics';
import { MetricsServer } from '../../apps/api/src/metrics/metrics-server';
import { HttpUser, toyStarter, until } from '../support/agent-helpers';
import { FakeAgent } from '../support/fake-agent';
import { ROOT, startSecondReplica, startTestHub, TestHub } from '../support/hub';
import { hasRedis } from '../support/prerequisites';

/** One series of a Prometheus text exposition: its name, labels and value. */
interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

function parse(text: string): Sample[] {
  const out: Sample[] = [];
  for (const line of text.split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m) throw new Error(`not a Prometheus sample line: ${line}`);
    const labels: Record<string, string> = {};
    for (const l of (m[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) labels[l[1]] = l[2];
    out.push({ name: m[1], labels, value: Number(m[3]) });
  }
  return out;
}

/** The value of the one series named `name` whose labels include `labels` (undefined: none). */
function value(samples: Sample[], name: string, labels: Record<string, string> = {}): number | undefined {
  const hits = samples.filter(
    (s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v),
  );
  if (hits.length > 1) throw new Error(`${name} ${JSON.stringify(labels)} matches ${hits.length} series`);
  return hits[0]?.value;
}

/** The shipped definitions, plus toy-decode on a GPU hardware key (the GPU-seconds metrics' runs). */
function definitions(): BenchmarkDefinition[] {
  const defs = loadBenchmarkDefinitions(path.join(ROOT, 'config/benchmarks'));
  const toy = defs.find((d) => d.id === 'toy-decode')!;
  return [...defs, { ...toy, id: 'toy-gpu', hardware: { accelerator: 'gpu', gpuModels: ['NVIDIA H200'] } }];
}

const timedSample = (index: number, totalMs: number, warmup = false) => ({
  type: 'sample' as const,
  workload: 'short',
  index,
  warmup,
  ttftMs: 1,
  tpotMs: 1,
  tps: 100,
  totalMs,
  tokens: 8,
});

describe('metrics: /metrics on METRICS_PORT and /api/admin/metrics for organizers', () => {
  let hub: TestHub;
  let org: HttpUser;
  let alice: HttpUser;
  let aliceTeam: { id: string };
  let agent: FakeAgent;
  let spectator: Socket;
  let metricsUrl: string;

  beforeAll(async () => {
    hub = await startTestHub({
      env: { ADMIN_LOGINS: 'metrics-org', METRICS_PORT: '0' },
      definitions: definitions(),
    });
    org = await HttpUser.signIn(hub.baseUrl, 'metrics-org');
    alice = await HttpUser.signIn(hub.baseUrl, 'metrics-alice');
    aliceTeam = await alice.createTeam();
    const { token } = await org.createAgent('metrics-cpu');
    agent = new FakeAgent(hub.baseUrl, token);
    expect((await agent.ready({ slots: 2 })).ok).toBe(true);
    const port = hub.app.get(MetricsServer).port;
    expect(port).toBeGreaterThan(0);
    metricsUrl = `http://127.0.0.1:${port}/metrics`;
  });
  afterAll(async () => {
    spectator?.close();
    agent?.socket.close();
    await hub?.close();
  });

  const scrape = async (): Promise<Sample[]> => {
    const res = await fetch(metricsUrl);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toContain('text/plain');
    return parse(await res.text());
  };

  it('counts a finished run with its benchmark, mode and verdict, with the queue empty after it', async () => {
    const sub = await alice.upload(await toyStarter());
    const run = await alice.startRun(sub, 'public');
    await until('assignment', () => agent.assigned.find((a) => a.runId === run.id), 10_000);
    const busy = await scrape();
    expect(value(busy, 'dryft_agent_slots', { state: 'online' })).toBe(2);
    expect(value(busy, 'dryft_agent_slots', { state: 'busy' })).toBe(1);
    expect(
      value(busy, 'dryft_runs_active', { benchmark: 'toy-decode', mode: 'public', status: 'assigned' }),
    ).toBe(1);

    await agent.socket.emitWithAck('run.started', { runId: run.id });
    const batch = await agent.batch(run.id, 1, [
      { type: 'log', n: 1, ts: Date.now(), stream: 'out', text: 'loading engine' },
      { type: 'log', n: 2, ts: Date.now(), stream: 'out', text: 'measuring' },
      { type: 'log', n: 3, ts: Date.now(), stream: 'out', text: 'done' },
    ]);
    expect(batch).toMatchObject({ ok: true, ackedSeq: 1 });
    const ack = await agent.finish(
      run.id,
      {
        status: 'failed',
        failureCode: 'incorrect_output',
        message: 'token 3 differs',
        score: null,
        workloads: [],
        metrics: {},
      },
      1,
    );
    expect(ack.ok).toBe(true);
    await alice.waitFor(run.id, (r) => r.status === 'failed', 10_000);

    // Counters follow the bus, which runs its handlers just after the emitter: wait for them.
    const after = await until(
      'the finished run counted',
      async () => {
        const s = await scrape();
        return value(s, 'dryft_runs_finished_total', { benchmark: 'toy-decode', mode: 'public' })
          ? s
          : undefined;
      },
      5_000,
    );
    expect(
      value(after, 'dryft_runs_finished_total', {
        benchmark: 'toy-decode',
        mode: 'public',
        status: 'failed',
        failure_code: 'incorrect_output',
      }),
    ).toBe(1);
    expect(after.filter((s) => s.name === 'dryft_runs_finished_total')).toHaveLength(1);
    expect(value(after, 'dryft_queue_depth', { benchmark: 'toy-decode', hardware: 'any' })).toBe(0);
    expect(value(after, 'dryft_queue_oldest_age_seconds', { benchmark: 'toy-decode', hardware: 'any' })).toBe(
      0,
    );
    expect(
      value(after, 'dryft_runs_active', { benchmark: 'toy-decode', mode: 'public', status: 'assigned' }),
    ).toBe(0);
    expect(value(after, 'dryft_agents', { status: 'online' })).toBe(1);
    expect(value(after, 'dryft_agents', { status: 'offline' })).toBe(0);
    expect(value(after, 'dryft_agent_slots', { state: 'busy' })).toBe(0);
    expect(value(after, 'dryft_log_lines_stored_total')).toBeGreaterThanOrEqual(3);
    expect(value(after, 'dryft_log_batch_seconds_count')).toBeGreaterThanOrEqual(1);
    expect(
      value(after, 'dryft_run_duration_seconds_count', {
        benchmark: 'toy-decode',
        mode: 'public',
        status: 'failed',
      }),
    ).toBe(1);
    expect(value(after, 'dryft_run_wait_seconds_count', { benchmark: 'toy-decode', mode: 'public' })).toBe(1);
    expect(value(after, 'dryft_db_pool_connections', { state: 'in_use' })).toBeGreaterThanOrEqual(0);
    expect(value(after, 'dryft_db_pool_waiting')).toBe(0);
    expect(value(after, 'dryft_db_pool_max')).toBe(20);
    // prom-client's default metrics: the event loop's lag among them.
    expect(value(after, 'nodejs_eventloop_lag_seconds')).toBeGreaterThanOrEqual(0);
  });

  it('shows a queued run and its age while no slot is free, and a draining agent’s slots', async () => {
    agent.accept = false;
    await org.post(`/api/admin/agents/${await agentId()}/drain`, { draining: true });
    const run = await alice.startRun(await alice.upload(await toyStarter()), 'official');
    const s = await scrape();
    expect(value(s, 'dryft_queue_depth', { benchmark: 'toy-decode', hardware: 'any' })).toBe(1);
    expect(
      value(s, 'dryft_queue_oldest_age_seconds', { benchmark: 'toy-decode', hardware: 'any' }),
    ).toBeGreaterThanOrEqual(0);
    expect(
      value(s, 'dryft_runs_active', { benchmark: 'toy-decode', mode: 'official', status: 'queued' }),
    ).toBe(1);
    expect(value(s, 'dryft_agents', { status: 'draining' })).toBe(1);
    expect(value(s, 'dryft_agent_slots', { state: 'draining' })).toBe(2);
    expect(value(s, 'dryft_agent_slots', { state: 'online' })).toBe(0);
    const canceled = await alice.post(`/api/runs/${run.id}/cancel`, { reason: 'metrics test' });
    expect(canceled.status).toBe(200);
    const later = await until(
      'the canceled run counted',
      async () => {
        const x = await scrape();
        return value(x, 'dryft_runs_finished_total', { mode: 'official', status: 'canceled' }) === 1
          ? x
          : undefined;
      },
      5_000,
    );
    expect(value(later, 'dryft_queue_depth', { benchmark: 'toy-decode', hardware: 'any' })).toBe(0);
    // Never assigned: no wait or run time is observed for it.
    expect(
      value(later, 'dryft_run_wait_seconds_count', { benchmark: 'toy-decode', mode: 'official' }),
    ).toBeUndefined();
  });

  it('counts /live sockets and the rooms they joined on this replica', async () => {
    spectator = io(`${hub.baseUrl}/live`, { transports: ['websocket'], forceNew: true, reconnection: false });
    await new Promise<void>((resolve, reject) => {
      spectator.once('connect', () => resolve());
      spectator.once('connect_error', reject);
    });
    expect((await spectator.emitWithAck('leaderboard.join', { benchmarkId: 'toy-decode' })).ok).toBe(true);
    const s = await scrape();
    expect(value(s, 'dryft_live_sockets')).toBe(1);
    expect(value(s, 'dryft_live_rooms')).toBeGreaterThanOrEqual(1);
  });

  it('lets organizers read the same text on the API port; refuses everyone else', async () => {
    const read = await org.get<string>('/api/admin/metrics');
    expect(read.status).toBe(200);
    expect(read.body).toContain('dryft_runs_finished_total{benchmark="toy-decode"');
    expect(read.body).toContain('nodejs_eventloop_lag_seconds');
    expect(read.body).toContain('process_cpu_seconds_total');
    expect(read.body).toContain('nodejs_heap_size_used_bytes');
    // No GC histogram: its observer of every collection cost more than the metrics may (default-metrics.ts).
    expect(read.body).not.toContain('nodejs_gc_duration_seconds');

    const member = await alice.get('/api/admin/metrics');
    expect(member.status).toBe(403);
    expect(member.body.error.code).toBe('organizers_only');
    // A team API token is refused too (organizer routes need a web session), and never read.
    const { token } = (await alice.post(`/api/teams/${aliceTeam.id}/tokens`, { name: 'scraper' })).body as {
      token: string;
    };
    const withToken = await fetch(`${hub.baseUrl}/api/admin/metrics`, {
      headers: { authorization: `Bearer ${token}` },
    });
    expect(withToken.status).toBe(403);
    expect(((await withToken.json()) as { error: { code: string } }).error.code).toBe('organizers_only');
    const anonymous = await fetch(`${hub.baseUrl}/api/admin/metrics`);
    expect(anonymous.status).toBe(401);
    expect(await anonymous.text()).not.toContain('dryft_runs');
    // The API port has no /metrics of its own (the web app answers it), and the metrics port serves nothing else.
    expect(await (await fetch(`${hub.baseUrl}/metrics`)).text()).not.toContain('dryft_runs');
    const other = await fetch(metricsUrl.replace('/metrics', '/api/admin/agents'));
    expect(other.status).toBe(404);
    expect((await fetch(metricsUrl, { method: 'POST' })).status).toBe(405);
  });

  it('counts the GPU seconds of a finished official run on a GPU key, and their ratio to the candidate’s timed seconds', async () => {
    const { token } = await org.createAgent('metrics-h200');
    const gpu = new FakeAgent(hub.baseUrl, token);
    try {
      const caps = { accelerator: 'gpu' as const, gpuModel: 'NVIDIA H200', gpuCount: 1 };
      expect((await gpu.ready({ capabilities: caps })).ok).toBe(true);
      const official = async (samples: ReturnType<typeof timedSample>[]) => {
        const run = await alice.startRun(await alice.upload(await toyStarter(), 'toy-gpu'), 'official');
        await until('assignment', () => gpu.assigned.find((a) => a.runId === run.id), 10_000);
        await gpu.events(run.id, samples);
        const verdict = { status: 'failed' as const, failureCode: 'unstable_timing' as const, score: null };
        expect(
          (await gpu.finish(run.id, { ...verdict, message: 'noisy', workloads: [], metrics: {} })).ok,
        ).toBe(true);
        return alice.waitFor(run.id, (r) => r.status === 'failed', 10_000);
      };
      // A warm-up is not the candidate's timed time: 0.2 s + 0.3 s are.
      const first = await official([timedSample(0, 900, true), timedSample(0, 200), timedSample(1, 300)]);
      const labels = { benchmark: 'toy-gpu', hardware: 'NVIDIA H200' };
      const s = await until(
        'the official run’s GPU seconds counted',
        async () => {
          const x = await scrape();
          return value(x, 'dryft_official_run_gpu_seconds_count', { ...labels, status: 'failed' }) === 1
            ? x
            : undefined;
        },
        5_000,
      );
      const held = (Date.parse(first.finishedAt!) - Date.parse(first.assignedAt!)) / 1000;
      const gpuSeconds = value(s, 'dryft_official_run_gpu_seconds_sum', { ...labels, status: 'failed' })!;
      expect(gpuSeconds).toBeCloseTo(held, 3);
      expect(value(s, 'dryft_official_candidate_timed_seconds_total', labels)).toBeCloseTo(0.5, 6);
      expect(value(s, 'dryft_official_run_gpu_seconds_per_candidate_second_count', labels)).toBe(1);
      expect(value(s, 'dryft_official_run_gpu_seconds_per_candidate_second_sum', labels)).toBeCloseTo(
        held / 0.5,
        3,
      );

      // A run with no timed sample adds GPU seconds but no ratio (nothing to divide by).
      await official([]);
      const t = await until(
        'the second official run counted',
        async () => {
          const x = await scrape();
          return value(x, 'dryft_official_run_gpu_seconds_count', { ...labels, status: 'failed' }) === 2
            ? x
            : undefined;
        },
        5_000,
      );
      expect(value(t, 'dryft_official_run_gpu_seconds_per_candidate_second_count', labels)).toBe(1);
      expect(value(t, 'dryft_official_candidate_timed_seconds_total', labels)).toBeCloseTo(0.5, 6);
      // An official run on the CPU agent holds no GPU: not counted.
      agent.accept = true;
      await org.post(`/api/admin/agents/${await agentId()}/drain`, { draining: false });
      const cpuRun = await alice.startRun(await alice.upload(await toyStarter()), 'official');
      await until('assignment', () => agent.assigned.find((a) => a.runId === cpuRun.id), 10_000);
      await agent.events(cpuRun.id, [timedSample(0, 200)]);
      const verdict = { status: 'failed' as const, failureCode: 'unstable_timing' as const, score: null };
      await agent.finish(cpuRun.id, { ...verdict, message: 'noisy', workloads: [], metrics: {} });
      await alice.waitFor(cpuRun.id, (r) => r.status === 'failed', 10_000);
      await until(
        'the CPU official run counted',
        async () =>
          value(await scrape(), 'dryft_runs_finished_total', {
            benchmark: 'toy-decode',
            mode: 'official',
            status: 'failed',
          }) === 1 || undefined,
        5_000,
      );
      const u = await scrape();
      expect(u.filter((x) => x.name.startsWith('dryft_official_') && x.labels.hardware === 'cpu')).toEqual(
        [],
      );
      expect(
        u.filter((x) => x.name.startsWith('dryft_official_') && x.labels.benchmark === 'toy-decode'),
      ).toEqual([]);
      expect(value(u, 'dryft_official_run_gpu_seconds_count', { ...labels, status: 'failed' })).toBe(2);
    } finally {
      gpu.socket.close();
    }
  });

  // After the runs above: a labelled counter or histogram has no series until it counted once.
  it('has every series the shipped alert rules and dashboard query', async () => {
    const alerts = parseYaml(readFileSync(path.join(ROOT, 'docker/prometheus/alerts.yml'), 'utf8')) as {
      groups: { rules: { alert: string; expr: string }[] }[];
    };
    const dashboard = JSON.parse(readFileSync(path.join(ROOT, 'docker/grafana/dryft.json'), 'utf8')) as {
      panels: { title: string; targets: { expr: string }[] }[];
    };
    const queries = [
      ...alerts.groups.flatMap((g) => g.rules.map((r) => ({ where: `alert ${r.alert}`, expr: r.expr }))),
      ...dashboard.panels.flatMap((p) => p.targets.map((t) => ({ where: `panel ${p.title}`, expr: t.expr }))),
    ];
    expect(queries.length).toBeGreaterThan(10);
    const exported = new Set((await scrape()).map((s) => s.name));
    for (const { where, expr } of queries)
      for (const [name] of expr.matchAll(/\b(?:dryft|nodejs)_\w+/g))
        expect(exported.has(name), `${where} queries ${name}`).toBe(true);
  });

  const agentId = async (): Promise<string> => {
    const list = await org.get<{ id: string; name: string }[]>('/api/admin/agents');
    return list.body.find((a) => a.name === 'metrics-cpu')!.id;
  };
});

const redisUrl = inject('redisUrl');
const reachable = await hasRedis(redisUrl);

describe.skipIf(!reachable)('metrics of two replicas: counters per replica, database gauges alike', () => {
  let a: TestHub;
  let b: Hub & { baseUrl: string };
  let agent: FakeAgent;

  beforeAll(async () => {
    const env = {
      REDIS_URL: redisUrl,
      REDIS_STREAM: `dryft-metrics-${process.pid}-${Date.now()}`,
      ADMIN_LOGINS: 'metrics2-org',
      METRICS_PORT: '0',
    };
    a = await startTestHub({ env });
    b = await startSecondReplica(a, env);
  });
  afterAll(async () => {
    agent?.socket.close();
    await b?.close();
    await a?.close();
  });

  const scrape = async (hub: Hub): Promise<Sample[]> => {
    const res = await fetch(`http://127.0.0.1:${hub.app.get(MetricsServer).port}/metrics`);
    expect(res.status).toBe(200);
    return parse(await res.text());
  };

  it('counts the run on the replica its agent reported to; both report the same queue and agents', async () => {
    const org = await HttpUser.signIn(a.baseUrl, 'metrics2-org');
    const alice = await HttpUser.signIn(a.baseUrl, 'metrics2-alice');
    await alice.createTeam();
    // The agent on replica B, the run started on replica A.
    agent = new FakeAgent(b.baseUrl, (await org.createAgent('metrics2-cpu')).token);
    expect((await agent.ready()).ok).toBe(true);
    const run = await alice.startRun(await alice.upload(await toyStarter()));
    await until('assignment', () => agent.assigned.find((x) => x.runId === run.id), 10_000);
    await agent.events(run.id, []);
    expect(
      (
        await agent.finish(run.id, {
          status: 'succeeded',
          failureCode: null,
          message: 'ok',
          score: null,
          workloads: [],
          metrics: {},
        })
      ).ok,
    ).toBe(true);
    await alice.waitFor(run.id, (r) => r.status === 'succeeded', 10_000);
    const onB = await until(
      'the run counted on replica B',
      async () => {
        const s = await scrape(b);
        return value(s, 'dryft_runs_finished_total', { status: 'succeeded' }) === 1 ? s : undefined;
      },
      5_000,
    );
    const onA = await scrape(a);
    expect(value(onA, 'dryft_runs_finished_total', { status: 'succeeded' })).toBeUndefined();
    for (const s of [onA, onB]) {
      expect(value(s, 'dryft_queue_depth', { benchmark: 'toy-decode', hardware: 'any' })).toBe(0);
      expect(value(s, 'dryft_agents', { status: 'online' })).toBe(1);
    }
  });
});

describe('metrics off: METRICS_ENABLED=false collects and serves nothing', () => {
  let hub: TestHub;
  beforeAll(async () => {
    hub = await startTestHub({
      env: { ADMIN_LOGINS: 'metrics-off-org', METRICS_ENABLED: 'false', METRICS_PORT: '0' },
    });
  });
  afterAll(async () => hub?.close());

  it('answers 404 metrics_disabled to organizers, and starts no metrics listener', async () => {
    const org = await HttpUser.signIn(hub.baseUrl, 'metrics-off-org');
    const res = await org.get('/api/admin/metrics');
    expect(res.status).toBe(404);
    expect(res.body.error).toMatchObject({ code: 'metrics_disabled' });
    expect(res.body.error.message).toMatch(/METRICS_ENABLED=false\); set it to true/);
    expect(hub.app.get(MetricsServer).port).toBeNull();
    expect(hub.app.get(HubMetrics).enabled).toBe(false);
  });
});
