import * as path from 'node:path';
import * as readline from 'node:readline';
import { checkTokenFormat } from '@dryft/libs/node';
import { loadSettings, type Settings } from './config';
import { CliError, EXIT, tokenAdvice } from './errors';
import { ApiClient } from './http';
import type { SocketFactory } from './live';
import { Output, type Streams } from './output';
import { findStarter, STARTER_FILE, type Starter } from './starter';

export interface GlobalFlags {
  json?: boolean;
  apiUrl?: string;
  color?: boolean;
}

/** What every command gets: output, settings, and API clients built on demand. */
export class Context {
  readonly out: Output;
  private settingsPromise?: Promise<Settings>;
  private starterPromise?: Promise<Starter | undefined>;

  constructor(
    readonly streams: Streams,
    readonly env: NodeJS.ProcessEnv,
    readonly flags: GlobalFlags,
    readonly socketFactory?: SocketFactory,
    /** The folder the command runs in (where dryft.json is looked for). */
    readonly cwd: string = process.cwd(),
  ) {
    this.out = new Output(streams, env, Boolean(flags.json), flags.color === false);
  }

  get json(): boolean {
    return Boolean(this.flags.json);
  }

  settings(): Promise<Settings> {
    this.settingsPromise ??= loadSettings(this.env, { apiUrl: this.flags.apiUrl });
    return this.settingsPromise;
  }

  /** The starter repository this command runs inside (its dryft.json), if any. */
  starter(): Promise<Starter | undefined> {
    this.starterPromise ??= findStarter(this.cwd);
    return this.starterPromise;
  }

  /**
   * The benchmark a command uses: --benchmark, else the starter's dryft.json, else `fallback`.
   * Says on stderr which one it used and where that came from.
   */
  async benchmarkId(
    flag: string | undefined,
    fallback?: { id: string; why: string },
  ): Promise<string | undefined> {
    const starter = await this.starter();
    const where = starter ? path.relative(this.cwd, starter.file) || STARTER_FILE : '';
    if (flag) {
      if (starter && starter.settings.benchmark !== flag)
        this.out.warn(
          `--benchmark ${flag} is not this repository's benchmark (${starter.settings.benchmark}, from ${where}).`,
        );
      this.out.note(`Benchmark: ${flag} (from --benchmark)`);
      return flag;
    }
    if (starter) {
      this.out.note(`Benchmark: ${starter.settings.benchmark} (from ${where})`);
      return starter.settings.benchmark;
    }
    if (fallback) this.out.note(`Benchmark: ${fallback.id} (${fallback.why}; no ${STARTER_FILE} here)`);
    return fallback?.id;
  }

  /** How often waits and REST fallbacks poll (DRYFT_POLL_MS for tests). */
  get pollMs(): number {
    const v = Number(this.env.DRYFT_POLL_MS);
    return Number.isFinite(v) && v > 0 ? v : 2000;
  }

  get retryBaseMs(): number {
    const v = Number(this.env.DRYFT_RETRY_BASE_MS);
    return Number.isFinite(v) && v > 0 ? v : 400;
  }

  /** A wait for the hub's rate limit or busy upload checkers, said on stderr. */
  private readonly rateLimitNotice = (message: string) => this.out.warn(message);

  /**
   * DRYFT_MAX_RATE_LIMIT_WAIT: the most seconds one request waits out the hub's Retry-After in all
   * (429 rate_limited, 503 checker_busy) before the CLI gives up and says when to try again (60 s).
   */
  get maxRateLimitWait(): number {
    const raw = this.env.DRYFT_MAX_RATE_LIMIT_WAIT;
    const v = Number(raw);
    return raw && Number.isFinite(v) && v >= 0 ? v : 60;
  }

  /** A client without a token (health, public benchmarks). */
  async anonymousApi(): Promise<ApiClient> {
    const s = await this.settings();
    return new ApiClient(
      s.apiUrl,
      undefined,
      s.tokenSource,
      this.retryBaseMs,
      this.rateLimitNotice,
      this.maxRateLimitWait,
    );
  }

  /** A client with the team token, checked offline first (shape and checksum). */
  async api(): Promise<{ api: ApiClient; token: string; settings: Settings }> {
    const s = await this.settings();
    if (!s.token) {
      throw new CliError(
        EXIT.auth,
        'No API token. Set DRYFT_TOKEN in this terminal (export DRYFT_TOKEN="dryft_pat_…") or run `dryft login` once.\n' +
          'A team owner or admin creates tokens under Team → API tokens; the full value is shown only once.',
        'no_token',
      );
    }
    const check = checkTokenFormat(s.token, 'pat');
    if (!check.ok) {
      throw new CliError(
        EXIT.auth,
        `The API token is not valid: ${check.message}\n${tokenAdvice(s.tokenSource)}`,
        `token_${check.reason}`,
      );
    }
    return {
      api: new ApiClient(
        s.apiUrl,
        s.token,
        s.tokenSource,
        this.retryBaseMs,
        this.rateLimitNotice,
        this.maxRateLimitWait,
      ),
      token: s.token,
      settings: s,
    };
  }

  get interactive(): boolean {
    return Boolean(this.streams.stdin.isTTY) && Boolean(this.streams.stderr.isTTY);
  }

  /** Asks a yes/no question on the terminal; false unless the answer starts with y. */
  async confirm(question: string): Promise<boolean> {
    const rl = readline.createInterface({
      input: this.streams.stdin,
      output: this.streams.stderr,
      terminal: true,
    });
    try {
      const answer = await new Promise<string>((resolve) => rl.question(`${question} [y/N] `, resolve));
      return /^y(es)?$/i.test(answer.trim());
    } finally {
      rl.close();
    }
  }

  /** Reads a secret from the terminal without echoing it. */
  async readSecret(prompt: string): Promise<string> {
    const stdin = this.streams.stdin;
    this.streams.stderr.write(prompt);
    stdin.setRawMode?.(true);
    stdin.resume();
    try {
      return await new Promise<string>((resolve, reject) => {
        let value = '';
        const onData = (chunk: Buffer | string) => {
          for (const ch of chunk.toString('utf8')) {
            if (ch === '\r' || ch === '\n') {
              stdin.off('data', onData);
              this.streams.stderr.write('\n');
              resolve(value);
              return;
            }
            if (ch === '\u0003') {
              stdin.off('data', onData);
              reject(new CliError(EXIT.badInput, 'Canceled.'));
              return;
            }
            if (ch === '\u007f' || ch === '\b') value = value.slice(0, -1);
            else value += ch;
          }
        };
        stdin.on('data', onData);
      });
    } finally {
      stdin.setRawMode?.(false);
      stdin.pause();
    }
  }

  /** Reads everything piped on stdin. */
  async readStdin(): Promise<string> {
    const chunks: Buffer[] = [];
    for await (const c of this.streams.stdin) chunks.push(Buffer.isBuffer(c) ? c : Buffer.from(String(c)));
    return Buffer.concat(chunks).toString('utf8');
  }
}
