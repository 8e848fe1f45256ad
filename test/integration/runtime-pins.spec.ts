import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AgentCapabilities, RunView } from '@dryft/libs';
import { HttpUser, until } from '../support/agent-helpers';
import { ROOT, startTestHub, TestHub } from '../support/hub';
import { FakeAgent } from '../support/fake-agent';

/** What an H100 agent built from docker/Dockerfile.agent reports (apps/gpu-agent probeRuntime). */
const PINNED_RUNTIME = {
  python: '3.11.9',
  torch: '2.5.1+cu124',
  cuda: '12.4',
  triton: '3.1.0',
  transformers: '4.51.3',
  driver: '550.54.15',
};

describe("runtime pins: each run records its agent's runtime and how it differs from the page's pins", () => {
  let hub: TestHub;
  let org: HttpUser;
  let alice: HttpUser;
  const agents: FakeAgent[] = [];
  const sample = readFileSync(path.join(ROOT, 'starters/deep-recurrence/submission.py'));

  beforeAll(async () => {
    hub = await startTestHub({ env: { ADMIN_LOGINS: 'pins-org', AGENT_LEASE_SECONDS: '3600' } });
    org = await HttpUser.signIn(hub.baseUrl, 'pins-org');
    alice = await HttpUser.signIn(hub.baseUrl, 'pins-alice');
    await alice.createTeam();
  });
  afterAll(async () => {
    for (const a of agents) a.close();
    await hub?.close();
  });

  const gpuAgent = async (name: string, runtime: Record<string, string> | undefined) => {
    const { token } = await org.createAgent(name);
    const a = new FakeAgent(hub.baseUrl, token);
    agents.push(a);
    const capabilities: Partial<AgentCapabilities> = {
      accelerator: 'gpu',
      gpuModel: 'NVIDIA H100 80GB HBM3',
      gpuCount: 1,
      ...(runtime ? { runtime } : {}),
    };
    expect((await a.ready({ slots: 1, capabilities })).ok).toBe(true);
    return a;
  };

  async function assignedRun(a: FakeAgent): Promise<RunView> {
    const sub = await alice.upload(sample, 'deep-recurrence', 'submission.py');
    const res = await alice.post(`/api/submissions/${sub}/runs`, {
      mode: 'public',
      tier: 'easy',
      dataset: 'affine',
    });
    expect(res.status).toBe(201);
    const runId: string = res.body.run.id;
    await until('the run to be assigned to its agent', async () => a.assigned.some((x) => x.runId === runId));
    return until('the run view to carry the runtime', async () => {
      const view = await alice.run(runId);
      return view.status !== 'queued' && view.runtime !== null ? view : undefined;
    });
  }

  it('an agent on the pinned versions: its runtime is shown, and no mismatch', async () => {
    const run = await assignedRun(await gpuAgent('h100-pinned', PINNED_RUNTIME));
    expect(run.runtime).toEqual(PINNED_RUNTIME);
    expect(run.runtimeMismatch).toEqual([]);
  });

  it('an agent on other versions: each differing pin is named, on the run and in the console', async () => {
    const { triton: _left, ...rest } = PINNED_RUNTIME;
    const other = { ...rest, torch: '2.6.0+cu126', python: '3.12.3' };
    const run = await assignedRun(await gpuAgent('h100-newer', other));
    expect(run.runtime).toEqual(other);
    expect(run.runtimeMismatch).toEqual([
      'python 3.12.3, pinned 3.11',
      'torch 2.6.0+cu126, pinned 2.5.1',
      'triton not reported, pinned 3.1.0',
    ]);
    const admin = await org.get(`/api/admin/runs/${run.id}`);
    expect(admin.status).toBe(200);
    expect(admin.body.runtimeMismatch).toEqual(run.runtimeMismatch);
  });

  it('an agent that reported no runtime fails every pin in one line', async () => {
    const a = await gpuAgent('h100-unprobed', undefined);
    const sub = await alice.upload(sample, 'deep-recurrence', 'submission.py');
    const res = await alice.post(`/api/submissions/${sub}/runs`, {
      mode: 'public',
      tier: 'easy',
      dataset: 'affine',
    });
    const runId: string = res.body.run.id;
    await until('the run to be assigned to its agent', async () => a.assigned.some((x) => x.runId === runId));
    const run = await until('its mismatch', async () => {
      const view = await alice.run(runId);
      return view.runtimeMismatch.length ? view : undefined;
    });
    expect(run.runtime).toBeNull();
    expect(run.runtimeMismatch).toEqual([
      'the agent reported no runtime, pinned python 3.11, cuda 12.4, torch 2.5.1, triton 3.1.0',
    ]);
  });
});
