import { checkTokenFormat, generateToken, hashToken, tokenDisplayPrefix } from '@dryft/libs/node';
import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import { IsNull } from 'typeorm';
import { AgentEntity } from '../agents/agent.entity';
import { openDatabase } from '../database/data-source';

/** A refusal the operator can act on: printed as is, without a stack. */
export class AdminCliError extends Error {
  constructor(
    message: string,
    /** A mistake in the command line (exit 2), not in the hub's state (exit 1). */
    readonly usage = false,
  ) {
    super(message);
  }
}

export interface AgentTokenArgs {
  name: string;
  /** A file, or `-` for standard output. */
  out: string;
  rotate: boolean;
}

const NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;

export function parseAgentTokenArgs(argv: string[]): AgentTokenArgs {
  const values: Record<string, string> = {};
  let rotate = false;
  for (let i = 0; i < argv.length; i++) {
    const flag = argv[i];
    if (flag === '--rotate') {
      rotate = true;
      continue;
    }
    if (flag !== '--name' && flag !== '--out') throw new AdminCliError(`unknown argument "${flag}"`, true);
    const v = argv[i + 1];
    if (v === undefined || (v.startsWith('--') && v !== '-'))
      throw new AdminCliError(`${flag} needs a value`, true);
    values[flag] = v;
    i++;
  }
  const value = (flag: string) => values[flag];
  const name = value('--name');
  const out = value('--out');
  if (!name)
    throw new AdminCliError('--name NAME is required (the agent as organizers see it, e.g. gpu-1)', true);
  if (!NAME.test(name))
    throw new AdminCliError(
      `--name "${name}": use 1-64 letters, digits, dots, dashes and underscores, starting with a letter or digit`,
      true,
    );
  if (!out)
    throw new AdminCliError(
      '--out FILE is required: where the agent reads its token (its tokenFile), or - to print it',
      true,
    );
  return { name, out, rotate };
}

export interface AgentTokenResult {
  token: string;
  agentId: string;
  /** What happened, for the operator. */
  message: string;
  created: boolean;
  kept: boolean;
}

/**
 * Creates agent `name` (as `POST /api/admin/agents` does, without an organizer: `created_by` is
 * null) and writes its token to `out` atomically, mode 0640: the agent image's user shares the
 * API user's group, so it reads the file from the shared volume. Idempotent: run again with the
 * same file, the token there is kept when it still belongs to that agent. An existing agent of
 * that name gets a new token only with `rotate`. The database is migrated first (under the
 * migration lock), so this may run before the API has ever started.
 */
export async function agentToken(databaseUrl: string, args: AgentTokenArgs): Promise<AgentTokenResult> {
  const ds = await openDatabase(databaseUrl);
  try {
    const agents = ds.getRepository(AgentEntity);
    const existing = await agents.findOneBy({ name: args.name, revokedAt: IsNull() });
    if (existing && !args.rotate && args.out !== '-') {
      const held = await readToken(args.out);
      if (held && hashToken(held) === existing.tokenHash) {
        return {
          token: held,
          agentId: existing.id,
          created: false,
          kept: true,
          message: `agent "${args.name}" already exists and ${args.out} holds its token: kept`,
        };
      }
    }
    if (existing && !args.rotate) {
      throw new AdminCliError(
        `an agent named "${args.name}" already exists (token ${existing.tokenPrefix}…): pass --rotate to give it a new token (the old one stops working), or choose another --name`,
      );
    }
    const token = generateToken('agent');
    const set = { tokenHash: hashToken(token), tokenPrefix: tokenDisplayPrefix(token) };
    // The file first: a token that reached no file is never the only copy of a working credential.
    if (args.out !== '-') await writeToken(args.out, token);
    let agentId: string;
    if (existing) {
      await agents.update(existing.id, set);
      agentId = existing.id;
    } else {
      agentId = (await agents.save(agents.create({ name: args.name, ...set, createdBy: null }))).id;
    }
    const where = args.out === '-' ? 'printed below' : `written to ${args.out} (mode 0640)`;
    return {
      token,
      agentId,
      created: !existing,
      kept: false,
      message: `${existing ? `agent "${args.name}" has a new token` : `agent "${args.name}" created`}; token ${where}`,
    };
  } finally {
    await ds.destroy();
  }
}

async function readToken(file: string): Promise<string | null> {
  try {
    const text = (await fs.readFile(file, 'utf8')).trim();
    return checkTokenFormat(text, 'agent').ok ? text : null;
  } catch {
    return null;
  }
}

async function writeToken(file: string, token: string): Promise<void> {
  const target = path.resolve(file);
  try {
    await fs.mkdir(path.dirname(target), { recursive: true });
    const tmp = `${target}.${process.pid}.tmp`;
    await fs.writeFile(tmp, `${token}\n`, { mode: 0o640 });
    await fs.chmod(tmp, 0o640);
    await fs.rename(tmp, target);
  } catch (err) {
    throw new AdminCliError(
      `cannot write ${target}: ${(err as Error).message} (mount a folder this user, uid ${process.getuid?.() ?? '?'}, can write there)`,
    );
  }
}
