#!/usr/bin/env node
import { mkdirSync } from 'node:fs';
import { Agent } from './agent';
import { AgentConfigError, loadAgentConfig } from './config';
import { cleanLeftovers, claimWorkDir } from './leftovers';
import { probeSandbox } from './sandbox';

/**
 * `dryft-agent --config agent.json [--insecure-no-sandbox]`, or `--local` for `npm start`.
 * Untrusted code runs only inside bubblewrap; without it the agent refuses to start unless told
 * explicitly (--insecure-no-sandbox, development only). `--local` falls back to no sandbox only when
 * bubblewrap cannot create namespaces here, and says so loudly.
 */
function main(): void {
  let config;
  try {
    config = loadAgentConfig(process.argv.slice(2));
  } catch (err) {
    if (err instanceof AgentConfigError) {
      console.error(`agent config error: ${err.message}`);
      process.exit(1);
    }
    throw err;
  }
  const probe = probeSandbox();
  let sandboxed = probe.ok;
  if (!probe.ok) {
    if (config.insecureNoSandbox || config.local) {
      const bar = '!'.repeat(100);
      console.error(
        `${bar}\n!! NO SANDBOX: ${probe.reason}.\n!! Submissions run with this user's rights, network and files. Development only; never on a shared box.\n${bar}`,
      );
      sandboxed = false;
    } else {
      console.error(
        `refusing to run untrusted code: ${probe.reason}. Install bubblewrap, or pass --insecure-no-sandbox for local development only.`,
      );
      process.exit(1);
    }
  }
  mkdirSync(config.workDir, { recursive: true, mode: 0o700 });
  try {
    claimWorkDir(config.workDir);
  } catch (err) {
    console.error(`agent config error: ${(err as Error).message}`);
    process.exit(1);
  }
  // Before taking any work: what a killed predecessor left (run folders with a team's engine).
  cleanLeftovers(config.workDir, (m) => console.log(`[agent] ${m}`));
  const agent = new Agent(config, {
    sandboxed,
    onFatal: (message) => {
      console.error(`agent stopped: ${message}`);
      setTimeout(() => process.exit(3), 200);
    },
  });
  agent.start();
  if (config.metrics) {
    const { port, host } = config.metrics;
    agent.metrics.serve(port, host).then(
      () => console.log(`[agent] metrics on http://${host}:${agent.metrics.port}/metrics`),
      (err: Error) => {
        console.error(`agent config error: ${err.message}`);
        process.exit(1);
      },
    );
  }
  // Tests cut the network under a live run this way (a real socket drop, not a mocked one).
  if (process.env.DRYFT_AGENT_TEST_HOOKS === '1') process.on('SIGUSR2', () => agent.simulateNetworkCut());
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) {
      console.error(`${signal} again: exiting now`);
      process.exit(130);
    }
    stopping = true;
    console.log(`[agent] ${signal}: finishing or handing back current runs`);
    agent.shutdown().then(
      () => process.exit(0),
      (err: unknown) => {
        console.error(err);
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
}

main();
