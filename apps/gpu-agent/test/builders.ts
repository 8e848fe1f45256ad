import type { AgentConfig } from '../src/config';

/**
 * An agent's configuration for tests (unit and end to end): one CPU slot, a static token, no
 * config file, short grace periods and a 10 ms batch interval; `over` sets what a test is about.
 */
export function agentConfig(
  over: Pick<AgentConfig, 'apiUrl' | 'workDir' | 'repoDir' | 'harness'> & Partial<AgentConfig>,
): AgentConfig {
  return {
    token: 'agent-token',
    tokenFile: null,
    configFile: null,
    local: false,
    slots: [{ index: 0, gpus: [] }],
    accelerator: 'cpu',
    gpuModel: null,
    benchmarks: [],
    models: {},
    insecureNoSandbox: false,
    hidePaths: [],
    sandboxUidBase: 61000,
    limits: { processes: 2048, openFiles: 4096, memoryBytes: null, workspaceBytes: 1 << 30 },
    compileCache: { maxBytesPerSlot: 0 },
    cancelGraceMs: 5_000,
    shutdownGraceMs: 1_000,
    batchIntervalMs: 10,
    ...over,
  };
}
