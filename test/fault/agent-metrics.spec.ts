import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AgentProc, HttpUser, spawnAgent, stopProc, toyStarter, until } from '../support/agent-helpers';
import { ROOT, startTestHub, TestHub } from '../support/hub';

/** A stand-in harness (harness.command): one line of output, then a succeeded verdict on the events fd. */
const HARNESS = [
  'import json, os, sys',
  'print("stand-in harness: measuring", flush=True)',
  'os.write(int(sys.argv[1]), (json.dumps({"type": "result", "status": "succeeded", "failureCode": None, "message": "ok", "score": None, "workloads": [], "metrics": {}}) + "\\n").encode())',
].join('\n');

const series = (text: string, name: string, labels = ''): number | undefined => {
  const line = text.split('\n').find((l) => l.startsWith(`${name}${labels ? `{${labels}}` : ''} `));
  return line === undefined ? undefined : Number(line.split(' ').pop());
};

describe("the agent's own metrics (agent.json `metrics`)", () => {
  let hub: TestHub;
  let agent: AgentProc | undefined;
  let metricsUrl: string;

  beforeAll(async () => {
    hub = await startTestHub({ env: { ADMIN_LOGINS: 'agent-metrics-org' } });
    const org = await HttpUser.signIn(hub.baseUrl, 'agent-metrics-org');
    const { token } = await org.createAgent('metrics-box');
    agent = spawnAgent({
      apiUrl: hub.baseUrl,
      token,
      dir: path.join(ROOT, '.data', 'test', `agent-metrics-${process.pid}-${Date.now()}`),
      config: {
        metrics: { port: 0 },
        harness: {
          python: process.env.HARNESS_PYTHON ?? '/usr/bin/python3',
          command: ['{python}', '-c', HARNESS, '{eventsFd}'],
        },
      },
      args: ['--insecure-no-sandbox'],
    });
    const port = await until(
      'the agent says where its metrics are',
      () => /metrics on http:\/\/127\.0\.0\.1:(\d+)\/metrics/.exec(agent!.output())?.[1],
      30_000,
    );
    metricsUrl = `http://127.0.0.1:${port}/metrics`;
  });
  afterAll(async () => {
    await stopProc(agent);
    await hub?.close();
  });

  it('counts the run it finished, its slots, and the bytes it downloaded and uploaded', async () => {
    const alice = await HttpUser.signIn(hub.baseUrl, 'agent-metrics-alice');
    await alice.createTeam();
    const archive = await toyStarter();
    const run = await alice.startRun(await alice.upload(archive));
    const done = await alice.waitFor(
      run.id,
      (r) => r.status === 'succeeded' || r.status === 'failed',
      60_000,
    );
    expect(done.status, agent!.output()).toBe('succeeded');
    // The verdict is counted when the agent hands it over; its slot frees once the folder is wiped.
    const text = await until(
      'the slot free again',
      async () => {
        const t = await (await fetch(metricsUrl)).text();
        return series(t, 'dryft_gpu_agent_slots', 'state="busy"') === 0 ? t : undefined;
      },
      20_000,
    );
    expect(series(text, 'dryft_gpu_agent_slots', 'state="total"')).toBe(1);
    expect(series(text, 'dryft_gpu_agent_connected')).toBe(1);
    expect(series(text, 'dryft_gpu_agent_draining')).toBe(0);
    expect(series(text, 'dryft_gpu_agent_runs_accepted_total')).toBe(1);
    expect(series(text, 'dryft_gpu_agent_runs_finished_total', 'status="succeeded"')).toBe(1);
    expect(series(text, 'dryft_gpu_agent_download_bytes_total')).toBe(archive.length);
    expect(series(text, 'dryft_gpu_agent_upload_bytes_total')).toBeGreaterThan(0);
    expect(series(text, 'dryft_gpu_agent_reconnects_total')).toBe(0);
    expect(text).toContain('nodejs_eventloop_lag_seconds');
  });

  it('serves nothing but GET /metrics on that port', async () => {
    expect((await fetch(metricsUrl.replace('/metrics', '/'))).status).toBe(404);
    expect((await fetch(metricsUrl, { method: 'POST' })).status).toBe(404);
  });
});
