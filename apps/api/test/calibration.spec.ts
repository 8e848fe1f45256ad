import { chmodSync, mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import type { AgentCapabilities, BaselineRemeasureBody, BenchmarkDefinition } from '@dryft/libs';
import { deriveHiddenSeed, loadBenchmarkDefinitions, withHiddenSeeds } from '@dryft/libs/node';
import type { AuditService } from '../src/audit/audit.service';
import { BenchmarkRegistry } from '../src/benchmarks/benchmark-registry';
import type { BenchmarksService, EffectiveBenchmark } from '../src/benchmarks/benchmarks.service';
import { hiddenSeedSecret } from '../src/benchmarks/hidden-seed-secret';
import type { Clock } from '../src/common/clock';
import { AppError } from '../src/common/errors';
import type { EventBus } from '../src/common/event-bus';
import { BaselineRemeasureService } from '../src/runs/baseline-remeasure.service';
import { verdictOf } from '../src/runs/run-lifecycle.service';
import type { RunsRepository } from '../src/runs/runs.repository';
import type { RunViews } from '../src/runs/run-views';
import type { UsersService } from '../src/users/users.service';
import { aResult, aRun, aSession, aUser } from './builders';

const ROOT = path.resolve(__dirname, '../../..');
const DEFS = loadBenchmarkDefinitions(path.join(ROOT, 'config/benchmarks'));
const TOY = DEFS.find((d) => d.id === 'toy-decode')!;
const CPU: AgentCapabilities = {
  accelerator: 'cpu',
  gpuModel: null,
  gpuCount: 0,
  driver: null,
  harnessVersion: 'test',
  agentVersion: 'test',
  benchmarks: [],
};

/** The service over mocked repositories: what it inserted and audited is recorded. */
function service(defs: BenchmarkDefinition[], pending: { calibrations?: string[] } = {}) {
  const registry = new BenchmarkRegistry(defs);
  const inserted: unknown[] = [];
  const audited: unknown[] = [];
  const runs = {
    agentsForCapacity: async () => [{ capabilities: CPU }],
    pendingRemeasure: async () => null,
    pendingCalibrations: async () =>
      (pending.calibrations ?? []).map((id) => aRun({ id, mode: 'calibration' })),
    insert: async (row: unknown) => {
      inserted.push(row);
      return aRun(row as never);
    },
    transaction: async (work: (tx: unknown) => unknown) => work(runs),
  };
  const benchmarks = {
    get: async (id: string): Promise<EffectiveBenchmark> => {
      const d = registry.get(id);
      if (!d) throw new Error(`no ${id}`);
      return { ...d, rulesChangedAt: null, rulesChangedReason: null };
    },
  };
  const svc = new BaselineRemeasureService(
    runs as unknown as RunsRepository,
    { view: async (r: { id: string }) => ({ id: r.id }) } as unknown as RunViews,
    benchmarks as unknown as BenchmarksService,
    registry,
    {} as UsersService,
    { record: async (_p: unknown, e: unknown) => void audited.push(e) } as unknown as AuditService,
    { now: () => new Date('2026-12-02T00:00:00Z') } as Clock,
    { emit: vi.fn() } as unknown as EventBus,
  );
  return { svc, inserted, audited };
}

const org = { ...aSession(aUser({ login: 'org' })), isAdmin: true };
const body = (over: Partial<BaselineRemeasureBody>): BaselineRemeasureBody => ({
  mode: 'calibration',
  reason: 'calibrate the cpu key',
  ...over,
});
async function refusal(p: Promise<unknown>): Promise<[number, string, string]> {
  try {
    await p;
  } catch (err) {
    if (err instanceof AppError) return [err.status, err.code, err.message];
    throw err;
  }
  throw new Error('not refused');
}

describe('BaselineRemeasureService: calibration refusals (mocked repositories)', () => {
  const defs = [...DEFS, { ...TOY, id: 'toy-noref', referenceEngine: null }];

  it('refuses each bad request with its code, and inserts and audits nothing', async () => {
    const { svc, inserted, audited } = service(defs);
    const cases: [string, Partial<BaselineRemeasureBody>, number, string, RegExp][] = [
      ['recurrence-cpu', {}, 400, 'no_baseline', /training benchmark/],
      ['toy-noref', {}, 422, 'no_reference', /referenceEngine/],
      ['toy-decode', { budgetSeconds: 29 }, 400, 'budget_out_of_range', /between 30 and 14400/],
      ['toy-decode', { budgetSeconds: 14_401 }, 400, 'budget_out_of_range', /GPU seconds per part/],
      ['toy-decode', { targetHalfWidthPct: 0 }, 400, 'target_out_of_range', /between 0.1 and 10/],
      ['toy-decode', { parts: 2.5 }, 400, 'parts_out_of_range', /whole number from 1 to 16/],
      ['toy-decode', { samples: 10 }, 400, 'samples_not_allowed', /baseline re-measure/],
      ['toy-decode', { hardware: 'NVIDIA H100' }, 422, 'unknown_hardware', /"cpu"/],
      [
        'toy-decode',
        { mode: 'baseline', budgetSeconds: 60 },
        400,
        'calibration_fields_not_allowed',
        /budgetSeconds/,
      ],
    ];
    for (const [id, over, status, code, words] of cases) {
      const [s, c, m] = await refusal(svc.queue(org, id, body(over)));
      expect([s, c], `${id} ${JSON.stringify(over)}`).toEqual([status, code]);
      expect(m).toMatch(words);
    }
    expect(inserted).toEqual([]);
    expect(audited).toEqual([]);
  });

  it('refuses while a calibration of the key is unfinished, naming its runs', async () => {
    const { svc, inserted } = service(defs, { calibrations: ['r-1', 'r-2'] });
    const [s, c, m] = await refusal(svc.queue(org, 'toy-decode', body({})));
    expect([s, c]).toEqual([409, 'calibration_pending']);
    expect(m).toContain('r-1, r-2');
    expect(inserted).toEqual([]);
  });

  it('queues n parts with the definition’s defaults and a whole-run limit that fits the budget', async () => {
    // As at boot: every hidden workload seeded (BenchmarkRegistry.withHiddenSeeds).
    const { svc, inserted, audited } = service(defs.map((d) => withHiddenSeeds(d, 's'.repeat(64))));
    const views = await svc.queue(org, 'toy-decode', body({ parts: 3 }));
    expect(views).toHaveLength(3);
    expect(inserted).toMatchObject(
      [1, 2, 3].map((part) => ({
        mode: 'calibration',
        calibrationPart: part,
        hardware: 'cpu',
        submissionId: null,
      })),
    );
    const spec = (inserted[0] as { spec: { calibrate: unknown; limits: { runSeconds: number } } }).spec;
    expect(spec.calibrate).toEqual({ targetHalfWidthPct: 1, maxPairs: 200, budgetSeconds: 120 });
    expect(spec.limits.runSeconds).toBeGreaterThan(120);
    expect((inserted[0] as { runTimeLimitSeconds: number }).runTimeLimitSeconds).toBeGreaterThan(
      spec.limits.runSeconds,
    );
    expect(audited).toMatchObject([
      { action: 'baseline.calibrate', details: { parts: 3, budgetSeconds: 120 } },
    ]);
  });
});

describe('verdictOf: calibration runs and the official result’s new fields', () => {
  const finished = (runId: string, result = aResult()) => ({
    runId,
    lastSeq: 0,
    canceled: false,
    exitCode: 0,
    result,
  });
  const calRun = () =>
    aRun({
      mode: 'calibration',
      hardware: 'cpu',
      spec: { kind: 'decode', workloads: [{ name: 'a' }, { name: 'b' }] } as never,
    });
  const cal = (workloads: Record<string, number[]>, hardware = 'cpu') => ({
    hardware,
    pairs: 4,
    seconds: 10,
    halfWidthPct: 1,
    workloads: Object.fromEntries(Object.entries(workloads).map(([n, ratios]) => [n, { ratios }])),
  });

  it('a calibration that succeeded with every workload’s pairs succeeds with no score', () => {
    const run = calRun();
    const v = verdictOf(
      run,
      finished(run.id, aResult({ score: 5, calibration: cal({ a: [1, 1, 1, 1], b: [2, 2, 2, 2] }) })),
      new Date(),
    );
    expect(v).toMatchObject({ status: 'succeeded', score: null, failureCode: null, promptNonce: null });
  });

  it('fails harness_error, in words, without pairs, on other hardware, with bad ratios or too few pairs', () => {
    for (const [c, why] of [
      [undefined, /reported no pairs/],
      [cal({ a: [1, 1, 1, 1], b: [1, 1, 1, 1] }, 'NVIDIA H200'), /not on cpu/],
      [cal({ a: [1, 1, 1, 1] }), /no pairs for b/],
      [cal({ a: [1, 1, 1, 1], b: [1, 0, 1, 1] }), /not all positive/],
      [cal({ a: [1, 1, 1], b: [1, 1, 1, 1] }), /fewer than 4 pairs for a \(3\)/],
    ] as const) {
      const run = calRun();
      const v = verdictOf(run, finished(run.id, aResult({ score: null, calibration: c })), new Date());
      expect(v).toMatchObject({ status: 'failed', failureCode: 'harness_error', quotaRefunded: true });
      expect(v.message).toMatch(why);
    }
  });

  it('keeps an official run’s nonce, scoring and absolute interval; drops a public run’s nonce', () => {
    const nonce = 'ab'.repeat(16);
    const extra = {
      promptNonce: nonce,
      absoluteInterval: { low: 1, high: 3, halfWidth: 1, level: 0.95 },
      scoring: {
        against: 'reference' as const,
        calibrated: true,
        hardware: 'cpu',
        kHalfWidthPct: 0.8,
        note: 'n',
      },
    };
    const official = aRun({ mode: 'official' });
    expect(verdictOf(official, finished(official.id, aResult(extra)), new Date())).toMatchObject(extra);
    const pub = aRun({ mode: 'public' });
    expect(verdictOf(pub, finished(pub.id, aResult(extra)), new Date())).toMatchObject({
      promptNonce: null,
      scoring: extra.scoring,
    });
  });
});

describe('hidden seeds from the per-install secret', () => {
  it('makes the secret once (mode 0600), reuses it, tightens a readable file and refuses a foreign one', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'dryft-seed-'));
    const a = hiddenSeedSecret(dir);
    const file = path.join(dir, 'hidden-seed.secret');
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(a).toMatch(/^[0-9a-f]{64}$/);
    expect(hiddenSeedSecret(dir)).toBe(a);
    chmodSync(file, 0o644);
    const said: string[] = [];
    expect(hiddenSeedSecret(dir, (m) => said.push(m))).toBe(a);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(said[0]).toMatch(/now 0600/);
    writeFileSync(file, 'not a secret\n');
    expect(() => hiddenSeedSecret(dir)).toThrow(/does not hold a secret Dryft made/);
    expect(readFileSync(file, 'utf8')).toBe('not a secret\n');
  });

  it('the shipped definitions carry shapes only; seeds are derived where missing, kept where given', () => {
    expect(TOY.kind === 'decode' && TOY.workloads.hidden.every((w) => w.seed === undefined)).toBe(true);
    const seeded = withHiddenSeeds(TOY, 'k'.repeat(64));
    const other = withHiddenSeeds(TOY, 'j'.repeat(64));
    if (seeded.kind !== 'decode' || other.kind !== 'decode' || TOY.kind !== 'decode')
      throw new Error('decode');
    expect(seeded.workloads.hidden.map((w) => w.seed)).toEqual([
      deriveHiddenSeed('k'.repeat(64), 'toy-decode', 'h-wide'),
      deriveHiddenSeed('k'.repeat(64), 'toy-decode', 'h-deep'),
    ]);
    expect(seeded.workloads.hidden[0].seed).not.toBe(seeded.workloads.hidden[1].seed);
    expect(seeded.workloads.hidden[0].seed).not.toBe(other.workloads.hidden[0].seed);
    expect(seeded.workloads.hidden[0].seed).toBeLessThanOrEqual(0x7fffffff);
    expect(seeded.workloads.public).toEqual(TOY.workloads.public);
    const given = {
      ...TOY,
      workloads: { ...TOY.workloads, hidden: TOY.workloads.hidden.map((w, i) => ({ ...w, seed: 70 + i })) },
    };
    expect(withHiddenSeeds(given, 'k'.repeat(64))).toBe(given);
    // The registry asks for the secret only when some definition needs it.
    const ask = vi.fn(() => 'k'.repeat(64));
    const reg = new BenchmarkRegistry([given]);
    expect(reg.withHiddenSeeds(ask)).toBe(reg);
    expect(ask).not.toHaveBeenCalled();
  });
});
