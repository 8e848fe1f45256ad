#!/usr/bin/env node
import { runCli } from './cli';

// A reader that stops early (`dryft logs ID | head -2`) closes the pipe: leave quietly, as Unix tools
// do, instead of dying on an unhandled EPIPE with a stack trace.
for (const stream of [process.stdout, process.stderr]) {
  stream.on('error', (err: NodeJS.ErrnoException) => {
    if (err.code === 'EPIPE') process.exit(0);
    throw err;
  });
}

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
