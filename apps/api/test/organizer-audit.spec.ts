import * as path from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { loadBenchmarkDefinitions } from '@dryft/libs/node';
import type { AgentCapabilities } from '@dryft/libs';
import type { AuditService } from '../src/audit/audit.service';
import { BenchmarkRegistry } from '../src/benchmarks/benchmark-registry';
import type { BenchmarkSettingsEntity } from '../src/benchmarks/benchmark-settings.entity';
import type { BenchmarkSettingsRepository } from '../src/benchmarks/benchmark-settings.repository';
import { BenchmarksService } from '../src/benchmarks/benchmarks.service';
import type { AgentEntity } from '../src/agents/agent.entity';
import type { AgentEvents } from '../src/agents/agent-events';
import type { AgentsRepository } from '../src/agents/agents.repository';
import { AgentsService } from '../src/agents/agents.service';
import { Clock } from '../src/common/clock';
import type { EventBus } from '../src/common/event-bus';
import type { Config } from '../src/config/config';
import type { RunQueue } from '../src/runs/run-queue';
import type { DataSource } from 'typeorm';
import { aSession, aUser } from './builders';

const ROOT = path.resolve(__dirname, '../../..');
const DEFS = loadBenchmarkDefinitions(path.join(ROOT, 'config/benchmarks'));
const organizer = aSession(aUser({ login: 'org' }));

function auditSpy() {
  const record = vi.fn(async () => ({}) as never);
  return { audit: { record } as unknown as AuditService, record };
}

/** The organizer's changes are audited by the services that make them (controllers only route). */
describe('BenchmarksService: organizer changes in the audit log', () => {
  const def = DEFS[0];

  function setup() {
    let stored: BenchmarkSettingsEntity = {
      benchmarkId: def.id,
      submissionsOpen: true,
      evaluationsOpen: false,
      runTimeLimitSeconds: 600,
      rulesVersion: 3,
      rulesChangedReason: null,
      rulesChangedAt: null,
      announcement: null,
      updatedAt: new Date(),
    };
    const settings = {
      all: vi.fn(async () => [stored]),
      update: vi.fn(async (_id: string, patch: Partial<BenchmarkSettingsEntity>) => {
        stored = { ...stored, ...patch };
        return stored;
      }),
      bumpRulesVersion: vi.fn(async (_id: string, reason: string) => {
        stored = { ...stored, rulesVersion: stored.rulesVersion + 1, rulesChangedReason: reason };
        return stored.rulesVersion;
      }),
    };
    const bus = { emit: vi.fn() } as unknown as EventBus;
    const { audit, record } = auditSpy();
    const service = new BenchmarksService(
      new BenchmarkRegistry([def]),
      settings as unknown as BenchmarkSettingsRepository,
      bus,
      {} as DataSource,
      audit,
    );
    return { service, record };
  }

  it('records each setting that really changed, from and to, with the reason; an unchanged one not', async () => {
    const { service, record } = setup();
    await service.changeSettings(
      organizer,
      def.id,
      { submissionsOpen: true, evaluationsOpen: true, runTimeLimitSeconds: 900 },
      'round two',
    );
    expect(record.mock.calls).toEqual([
      [
        organizer,
        {
          action: 'benchmark.open_evaluations',
          target: { kind: 'benchmark', id: def.id },
          benchmarkId: def.id,
          reason: 'round two',
          details: { from: false, to: true },
        },
      ],
      [
        organizer,
        {
          action: 'benchmark.run_time_limit',
          target: { kind: 'benchmark', id: def.id },
          benchmarkId: def.id,
          reason: 'round two',
          details: { from: 600, to: 900 },
        },
      ],
    ]);
  });

  it('records nothing for a change that changes nothing, and an empty reason as none', async () => {
    const { service, record } = setup();
    await service.changeSettings(organizer, def.id, { submissionsOpen: true, announcement: null }, '');
    expect(record).not.toHaveBeenCalled();
    await service.changeSettings(organizer, def.id, { announcement: 'Hello' }, '');
    expect(record).toHaveBeenCalledWith(
      organizer,
      expect.objectContaining({ reason: null, details: { from: null, to: 'Hello' } }),
    );
  });

  it('records a rules bump with its reason and the versions', async () => {
    const { service, record } = setup();
    const after = await service.bumpRulesVersion(organizer, def.id, 'new hidden set');
    expect(after.rulesVersion).toBe(4);
    expect(record).toHaveBeenCalledWith(organizer, {
      action: 'benchmark.rules_bump',
      target: { kind: 'benchmark', id: def.id },
      benchmarkId: def.id,
      reason: 'new hidden set',
      details: { from: 3, to: 4 },
    });
  });

  it('records nothing for an unknown benchmark', async () => {
    const { service, record } = setup();
    await expect(
      service.changeSettings(organizer, 'nope', { submissionsOpen: false }, 'x'),
    ).rejects.toMatchObject({
      code: 'benchmark_not_found',
    });
    await expect(service.bumpRulesVersion(organizer, 'nope', 'x')).rejects.toMatchObject({
      code: 'benchmark_not_found',
    });
    expect(record).not.toHaveBeenCalled();
  });
});

describe('AgentsService: organizer actions on agents in the audit log', () => {
  function setup(agent: Partial<AgentEntity> = {}) {
    const row = {
      id: 'a1',
      name: 'box-1',
      tokenHash: 'h',
      tokenPrefix: 'dryft_agent_x',
      createdBy: organizer.user.id,
      createdAt: new Date(),
      capabilities: null as AgentCapabilities | null,
      slots: [],
      draining: false,
      connected: true,
      lastHeartbeatAt: null,
      revokedAt: null,
      ...agent,
    } satisfies AgentEntity;
    const repo = {
      insert: vi.fn(async () => row),
      findById: vi.fn(async () => row),
      update: vi.fn(async () => undefined),
    };
    const queue = { activeRunsByAgent: vi.fn(async () => [{ id: 'r1', agentId: 'a1' }]) };
    const config = { AGENT_LEASE_SECONDS: 30 } as Config;
    const events = { changed: vi.fn() } as unknown as AgentEvents;
    const { audit, record } = auditSpy();
    const service = new AgentsService(
      repo as unknown as AgentsRepository,
      queue as unknown as RunQueue,
      new Clock(),
      events,
      audit,
      config,
    );
    return { service, record, repo };
  }

  it('records a created agent by name, never its token', async () => {
    const { service, record } = setup();
    const created = await service.create(organizer, 'box-1');
    expect(record).toHaveBeenCalledWith(organizer, {
      action: 'agent.create',
      target: { kind: 'agent', id: 'a1' },
      details: { name: 'box-1' },
    });
    expect(JSON.stringify(record.mock.calls)).not.toContain(created.token);
  });

  it('records a drain with its reason', async () => {
    const { service, record } = setup();
    await service.setDraining(organizer, 'a1', true, 'maintenance');
    expect(record).toHaveBeenCalledWith(organizer, {
      action: 'agent.drain',
      target: { kind: 'agent', id: 'a1' },
      reason: 'maintenance',
      details: { name: 'box-1', draining: true },
    });
  });

  it('refuses to drain a revoked agent and records nothing', async () => {
    const { service, record, repo } = setup({ revokedAt: new Date() });
    await expect(service.setDraining(organizer, 'a1', true, null)).rejects.toMatchObject({
      code: 'agent_revoked',
    });
    expect(repo.update).not.toHaveBeenCalled();
    expect(record).not.toHaveBeenCalled();
  });

  it('records a revoke with its reason and the runs it fails', async () => {
    const { service, record } = setup();
    const { runIds } = await service.revoke(organizer, 'a1', 'key leaked');
    expect(runIds).toEqual(['r1']);
    expect(record).toHaveBeenCalledWith(organizer, {
      action: 'agent.revoke',
      target: { kind: 'agent', id: 'a1' },
      reason: 'key leaked',
      details: { name: 'box-1', failedRuns: ['r1'] },
    });
  });
});
