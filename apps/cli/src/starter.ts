import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import { z } from 'zod';
import { CliError, EXIT } from './errors';

/**
 * A starter repository says which benchmark it belongs to in `dryft.json` at its root. Every
 * command run inside it (in that folder or below) uses that benchmark unless told otherwise, and
 * says which one it used and why.
 */
export const STARTER_FILE = 'dryft.json';

export const StarterSettings = z
  .object({
    benchmark: z
      .string()
      .regex(/^[a-z0-9][a-z0-9-]*$/, 'a benchmark id such as toy-decode')
      .describe('the benchmark this repository submits to'),
    submission: z.string().min(1).optional(),
  })
  .passthrough();
export type StarterSettings = z.infer<typeof StarterSettings>;

export interface Starter {
  /** The absolute path of dryft.json. */
  file: string;
  settings: StarterSettings;
}

/** Finds dryft.json in `cwd` or the nearest folder above it; undefined when there is none. */
export async function findStarter(cwd: string): Promise<Starter | undefined> {
  let dir = path.resolve(cwd);
  for (;;) {
    const file = path.join(dir, STARTER_FILE);
    let raw: string | undefined;
    try {
      raw = await fs.readFile(file, 'utf8');
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code !== 'ENOENT' && code !== 'ENOTDIR' && code !== 'EISDIR' && code !== 'EACCES')
        throw new CliError(EXIT.badInput, `Cannot read ${file}: ${(err as Error).message}`);
    }
    if (raw !== undefined) return { file, settings: parseStarter(file, raw) };
    const up = path.dirname(dir);
    if (up === dir) return undefined;
    dir = up;
  }
}

function parseStarter(file: string, raw: string): StarterSettings {
  let json: unknown;
  try {
    json = JSON.parse(raw);
  } catch {
    throw new CliError(
      EXIT.badInput,
      `${file} is not valid JSON. It names this repository's benchmark, e.g. {"benchmark": "toy-decode"}; fix it or delete it.`,
      'bad_starter_settings',
    );
  }
  const parsed = StarterSettings.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new CliError(
      EXIT.badInput,
      `${file}: "${issue.path.join('.') || '(top)'}" ${issue.message}. It names this repository's benchmark, e.g. {"benchmark": "toy-decode"}.`,
      'bad_starter_settings',
    );
  }
  return parsed.data;
}
