import { promises as fs, constants as fsc } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { z } from 'zod';
import { CliError, EXIT } from './errors';

/** The user's config file: `$XDG_CONFIG_HOME/dryft/config.json` or `~/.config/dryft/config.json`. */
export function configPath(env: NodeJS.ProcessEnv): string {
  const xdg = env.XDG_CONFIG_HOME?.trim();
  const base = xdg && path.isAbsolute(xdg) ? xdg : path.join(env.HOME || os.homedir(), '.config');
  return path.join(base, 'dryft', 'config.json');
}

export const ConfigFile = z.object({
  token: z.string().optional(),
  apiUrl: z.string().optional(),
  savedAt: z.string().optional(),
});
export type ConfigFile = z.infer<typeof ConfigFile>;

export async function readConfig(file: string): Promise<ConfigFile> {
  let raw: string;
  try {
    raw = await fs.readFile(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return {};
    throw new CliError(EXIT.badInput, `Cannot read ${file}: ${(err as Error).message}`);
  }
  let json: unknown;
  try {
    json = JSON.parse(raw);
  } catch {
    throw new CliError(
      EXIT.badInput,
      `${file} is not valid JSON; fix it, or delete it and run \`dryft login\` again.`,
    );
  }
  const parsed = ConfigFile.safeParse(json);
  if (!parsed.success)
    throw new CliError(
      EXIT.badInput,
      `${file} has unexpected content; delete it and run \`dryft login\` again.`,
    );
  return parsed.data;
}

/** Writes the file with mode 0600 (folder 0700), atomically: a crash never leaves half a token. */
export async function writeConfig(file: string, data: ConfigFile): Promise<void> {
  await fs.mkdir(path.dirname(file), { recursive: true, mode: 0o700 });
  const tmp = `${file}.${process.pid}.tmp`;
  const handle = await fs.open(tmp, fsc.O_WRONLY | fsc.O_CREAT | fsc.O_TRUNC, 0o600);
  try {
    await handle.writeFile(JSON.stringify(data, null, 2) + '\n');
    await handle.chmod(0o600);
  } finally {
    await handle.close();
  }
  await fs.rename(tmp, file);
}

/** True when the file can be read by the group or others (a token should not be). */
export async function isTooOpen(file: string): Promise<boolean> {
  if (process.platform === 'win32') return false;
  try {
    const st = await fs.stat(file);
    return (st.mode & 0o077) !== 0;
  } catch {
    return false;
  }
}

/** scripts/bundle-cli.mjs can bake the event's hub into the published bundle (DRYFT_BUNDLE_API_URL). */
export const DEFAULT_API_URL = process.env.DRYFT_BUNDLED_API_URL || 'http://localhost:3000';

export interface Settings {
  apiUrl: string;
  apiUrlSource: string;
  token: string | undefined;
  /** Where the token came from, for messages (never the value). */
  tokenSource: string;
  configFile: string;
  config: ConfigFile;
}

/**
 * Precedence: `--api-url` > `DRYFT_API_URL` > the config file > the default. `DRYFT_TOKEN` > the
 * token saved by `dryft login`.
 */
export async function loadSettings(env: NodeJS.ProcessEnv, flags: { apiUrl?: string }): Promise<Settings> {
  const configFile = configPath(env);
  const config = await readConfig(configFile);
  let apiUrl = DEFAULT_API_URL;
  let apiUrlSource = 'the built-in default';
  if (flags.apiUrl) {
    apiUrl = flags.apiUrl;
    apiUrlSource = '--api-url';
  } else if (env.DRYFT_API_URL?.trim()) {
    apiUrl = env.DRYFT_API_URL.trim();
    apiUrlSource = 'DRYFT_API_URL';
  } else if (config.apiUrl) {
    apiUrl = config.apiUrl;
    apiUrlSource = configFile;
  }
  try {
    const u = new URL(apiUrl);
    if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new Error('protocol');
  } catch {
    throw new CliError(
      EXIT.badInput,
      `The API URL from ${apiUrlSource} (${JSON.stringify(apiUrl)}) is not an http(s) URL, e.g. https://dryft.example.org.`,
    );
  }
  apiUrl = apiUrl.replace(/\/+$/, '');
  let token: string | undefined;
  let tokenSource = 'nowhere (DRYFT_TOKEN is not set and `dryft login` has not saved one)';
  if (env.DRYFT_TOKEN !== undefined && env.DRYFT_TOKEN.trim() !== '') {
    token = env.DRYFT_TOKEN.trim();
    tokenSource = 'DRYFT_TOKEN';
  } else if (config.token) {
    token = config.token;
    tokenSource = `the config file ${configFile}`;
  }
  return { apiUrl, apiUrlSource, token, tokenSource, configFile, config };
}
