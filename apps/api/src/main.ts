#!/usr/bin/env node
import { createHub } from './bootstrap';
import { BenchmarkConfigError } from '@dryft/libs/node';
import { ConfigError, loadConfig } from './config/config';
import { Logger } from '@nestjs/common';
import { describeError } from './common/describe-error';

/** SIGTERM/SIGINT to exit, whatever is still open. */
const SHUTDOWN_LIMIT_MS = 4_500;

async function main(): Promise<void> {
  let config;
  try {
    config = loadConfig();
  } catch (err) {
    if (err instanceof ConfigError) {
      // One line per problem, then stop: a hub never starts half-configured.
      for (const p of err.problems) console.error(`config error: ${p}`);
      process.exit(1);
    }
    throw err;
  }
  // In JSON these lines go through the hub's logger like every other; in text they stay as the
  // quick start prints them (tests wait for "Dryft hub listening on").
  const json = config.logFormat === 'json';
  const mainLogger = new Logger('Dryft');
  const say = (line: string) => (json ? mainLogger.log(line) : console.log(line));
  const complain = (line: string) => (json ? mainLogger.error(line) : console.error(line));
  let hub;
  try {
    hub = await createHub(config);
  } catch (err) {
    if (err instanceof BenchmarkConfigError) {
      for (const p of err.problems) complain(`benchmark definition error: ${p}`);
      process.exit(1);
    }
    throw err;
  }
  try {
    await hub.app.listen(config.PORT, config.HOST);
  } catch (err) {
    await hub.close().catch(() => undefined);
    throw err;
  }
  // The port it really listens on (PORT=0 picks a free one), and the address to open.
  const address = hub.app.getHttpServer().address();
  const port = typeof address === 'object' && address ? address.port : config.PORT;
  const open = config.publicUrlSet ? config.PUBLIC_URL : `http://localhost:${port}`;
  say(`Dryft hub listening on ${open} (port ${port})`);
  let closing = false;
  const stop = async (signal: string) => {
    if (closing) return;
    closing = true;
    const started = Date.now();
    say(`${signal}: shutting down (at most ${SHUTDOWN_LIMIT_MS / 1000} s)`);
    // Bounded: whatever is still pending after the limit is named, and the process exits anyway.
    setTimeout(() => {
      complain(
        `shutdown: still waiting for "${hub.closingStep ?? 'unknown'}" after ${SHUTDOWN_LIMIT_MS / 1000} s; exiting now`,
      );
      hub.abandon();
      process.exit(1);
    }, SHUTDOWN_LIMIT_MS).unref();
    await hub.close().catch((e: unknown) => complain(`shutdown: ${describeError(e)}`));
    say(`shutdown complete in ${Date.now() - started} ms`);
    process.exit(0);
  };
  process.on('SIGINT', () => void stop('SIGINT'));
  process.on('SIGTERM', () => void stop('SIGTERM'));
}

main().catch((err: unknown) => {
  // Always the real reason: a rejection without a value once printed `undefined` here.
  console.error(
    `The hub could not start: ${describeError(err)}${err instanceof Error && err.stack ? `\n${err.stack}` : ''}`,
  );
  process.exit(1);
});
