#!/usr/bin/env node
/**
 * `dryft-admin`: what an operator does on the hub's own machine, before anyone can sign in.
 *
 *   node apps/api/dist/admin-cli/main.js agent-token --name gpu-1 --out /run/dryft-agent/token
 *
 * It reads the API's own settings (DATABASE_URL or DATABASE_PASSWORD_FILE, …; docs/DEPLOY.md), so
 * in the compose stack `docker compose run --rm admin agent-token …` needs nothing more.
 */
import 'reflect-metadata';
import { ConfigError, loadConfig } from '../config/config';
import { agentToken, AdminCliError, parseAgentTokenArgs } from './agent-token';

const USAGE = `usage: dryft-admin agent-token --name NAME --out FILE|- [--rotate]

  agent-token   create the agent NAME and write its token to FILE (mode 0640; - prints it).
                Run again with the same FILE: the token there is kept. --rotate gives an
                existing agent a new token (the old one stops working at its next connect).`;

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  if (!command || command === '--help' || command === '-h') {
    console.log(USAGE);
    return command ? 0 : 2;
  }
  if (command !== 'agent-token') {
    console.error(`dryft-admin: unknown command "${command}"\n${USAGE}`);
    return 2;
  }
  const args = parseAgentTokenArgs(rest);
  const config = loadConfig();
  if (!config.DATABASE_URL) {
    throw new AdminCliError(
      'DATABASE_URL is not set: dryft-admin works on the hub database; give it the API settings (DATABASE_URL, and DATABASE_PASSWORD_FILE where the password is a secret)',
    );
  }
  const result = await agentToken(config.DATABASE_URL, args);
  console.error(result.message);
  // Written before the process exits: a token lost in a pipe's buffer is a token nobody has.
  if (args.out === '-')
    await new Promise<void>((resolve) => process.stdout.write(`${result.token}\n`, () => resolve()));
  return 0;
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err: unknown) => {
    if (err instanceof ConfigError) {
      for (const p of err.problems) console.error(`config error: ${p}`);
    } else if (err instanceof AdminCliError) {
      console.error(`dryft-admin: ${err.message}`);
    } else if (typeof (err as { code?: unknown }).code === 'string') {
      // The database refused or was not there (ECONNREFUSED, ENOTFOUND, 28P01 bad password, …).
      const { code, message } = err as { code: string; message: string };
      console.error(
        `dryft-admin: cannot use the hub database (${code}: ${message}): check DATABASE_URL (and DATABASE_PASSWORD_FILE), and that Postgres is up`,
      );
    } else {
      // The real reason, stack included: this is a bug or the database's own refusal.
      console.error(`dryft-admin: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
    }
    process.exit(err instanceof AdminCliError && err.usage ? 2 : 1);
  },
);
