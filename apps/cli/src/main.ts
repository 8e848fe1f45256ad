#!/usr/bin/env node
import { runCli } from './cli';

runCli(process.argv.slice(2), {
  streams: { stdout: process.stdout, stderr: process.stderr, stdin: process.stdin },
  env: process.env,
}).then(
  (code) => {
    process.exitCode = code;
    // Nothing should keep the process alive after a command; if a stray handle does, leave anyway.
    setTimeout(() => process.exit(code), 500).unref();
  },
  (err) => {
    process.stderr.write(`error: ${(err as Error)?.stack ?? String(err)}\n`);
    process.exit(5);
  },
);
