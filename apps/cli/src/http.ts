import * as http from 'node:http';
import * as https from 'node:https';
import { randomUUID } from 'node:crypto';
import { ApiErrorBody } from '@dryft/libs';
import type { z } from 'zod';
import { CliError, EXIT, exitForStatus, tokenAdvice } from './errors';
import { CLI_VERSION } from './version';

export interface RawResponse {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: Buffer;
  /** Times this request was sent again after a 429 `rate_limited` or 503 `checker_busy` wait. */
  retries?: number;
}

/**
 * The most times one request refused as rate limited (429 `rate_limited`) or with every upload
 * checker busy (503 `checker_busy`) is sent again. Both are refused before anything is done or
 * stored, so sending the same request again is safe; the waits also add up to at most the client's
 * `maxRetryWaitSeconds` (DRYFT_MAX_RATE_LIMIT_WAIT, 60 s).
 */
export const MAX_BUSY_RETRIES = 3;

export interface RequestOptions {
  method?: string;
  query?: Record<string, string | number | undefined | null>;
  json?: unknown;
  body?: Buffer;
  headers?: Record<string, string>;
  /** Milliseconds without progress before the request counts as timed out. */
  timeoutMs?: number;
  onUploadProgress?: (sent: number, total: number) => void;
  /** Skip the Authorization header (health checks). */
  anonymous?: boolean;
}

/** The API answered with an error body. */
export class ApiError extends CliError {
  constructor(
    readonly status: number,
    code: string,
    message: string,
    details?: unknown,
  ) {
    super(exitForStatus(status), message, code, details);
  }
}

/** The request never got an answer: refused, reset, DNS, timeout. */
export class NetworkError extends CliError {
  constructor(
    message: string,
    readonly reason: string,
    /** False when the request certainly never reached the server (refused, DNS), so a retry is safe. */
    readonly maybeProcessed: boolean,
  ) {
    super(EXIT.network, message, 'network');
  }
}

const SAFE_TO_RETRY_CODES = new Set([
  'ECONNREFUSED',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
]);

export class ApiClient {
  /** Requests made, for tests and `--verbose` style diagnostics. */
  requests = 0;

  constructor(
    readonly baseUrl: string,
    private readonly token: string | undefined,
    private readonly tokenSource: string,
    /** First back-off of a retried GET (doubles each time). */
    private readonly retryBaseMs = 400,
    /** Where a wait for the hub's rate limit is said (stderr). */
    private readonly notice: (message: string) => void = () => undefined,
    /** The most seconds one request waits out `Retry-After`s in all (rate limited, checker busy). */
    private readonly maxRetryWaitSeconds = 60,
  ) {}

  url(path: string, query?: RequestOptions['query']): URL {
    const u = new URL(this.baseUrl + path);
    for (const [k, v] of Object.entries(query ?? {}))
      if (v !== undefined && v !== null && v !== '') u.searchParams.set(k, String(v));
    return u;
  }

  /**
   * One HTTP exchange (throws NetworkError; returns any status), except that a request the hub
   * refused before doing anything (429 `rate_limited` or 503 `checker_busy`, with `Retry-After`) is
   * sent again after the wait it names, saying so: up to MAX_BUSY_RETRIES times while the waits add
   * up to at most `maxRetryWaitSeconds`. A longer wait, or a refusal past that, is returned as it is
   * and said as an error with when to run the command again.
   */
  async raw(path: string, opts: RequestOptions = {}): Promise<RawResponse> {
    let waited = 0;
    for (let retries = 0; ; retries++) {
      const res = await this.exchange(path, opts);
      res.retries = retries;
      const busy = busyWait(res);
      if (!busy || retries >= MAX_BUSY_RETRIES || waited + busy.seconds > this.maxRetryWaitSeconds)
        return res;
      const which = `retry ${retries + 1} of at most ${MAX_BUSY_RETRIES}`;
      this.notice(
        busy.code === 'checker_busy'
          ? `The hub is busy checking uploads; retrying in ${busy.seconds} s (Retry-After, ${which}). Nothing was stored yet.`
          : `The hub is rate limiting this request (${serverMessage(res) ?? 'HTTP 429'}); retrying in ${busy.seconds} s (Retry-After, ${which}).`,
      );
      waited += busy.seconds;
      await sleep(busy.seconds * 1000);
    }
  }

  private exchange(path: string, opts: RequestOptions): Promise<RawResponse> {
    const url = this.url(path, opts.query);
    const headers: Record<string, string> = {
      accept: 'application/json',
      'user-agent': `dryft-cli/${CLI_VERSION} node/${process.versions.node}`,
      ...opts.headers,
    };
    if (this.token && !opts.anonymous) headers.authorization = `Bearer ${this.token}`;
    let body: Buffer | undefined = opts.body;
    if (opts.json !== undefined) {
      body = Buffer.from(JSON.stringify(opts.json));
      headers['content-type'] = 'application/json';
    }
    if (body) headers['content-length'] = String(body.length);
    const lib = url.protocol === 'https:' ? https : http;
    const timeoutMs = opts.timeoutMs ?? 30_000;
    this.requests += 1;
    return new Promise<RawResponse>((resolve, reject) => {
      const req = lib.request(url, { method: opts.method ?? 'GET', headers, timeout: timeoutMs }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }),
        );
        res.on('error', (err) => reject(this.networkError(err)));
      });
      req.on('timeout', () =>
        req.destroy(
          Object.assign(new Error(`no answer within ${Math.round(timeoutMs / 1000)} s`), {
            code: 'ETIMEDOUT',
          }),
        ),
      );
      req.on('error', (err) => reject(this.networkError(err)));
      if (!body) {
        req.end();
        return;
      }
      // Written in chunks so an upload can show its progress.
      const total = body.length;
      const chunk = 64 * 1024;
      let offset = 0;
      const pump = (): void => {
        while (offset < total) {
          const piece = body!.subarray(offset, Math.min(total, offset + chunk));
          offset += piece.length;
          const sent = offset;
          const ok = req.write(piece, () => opts.onUploadProgress?.(sent, total));
          if (!ok) {
            req.once('drain', pump);
            return;
          }
        }
        req.end();
      };
      req.on('socket', (s) => (s.connecting ? s.once('connect', pump) : pump()));
    });
  }

  private networkError(err: NodeJS.ErrnoException): NetworkError {
    const code = err.code ?? 'ERROR';
    const what =
      code === 'ETIMEDOUT' ? `it did not answer in time (${err.message})` : `${code}: ${err.message}`;
    return new NetworkError(
      `Cannot reach the Dryft API at ${this.baseUrl} (${what}).\n` +
        'Check DRYFT_API_URL (or --api-url), your network connection and that the hub is up; `dryft doctor` checks all of these.',
      code,
      !SAFE_TO_RETRY_CODES.has(code),
    );
  }

  /** Turns a non-2xx answer into an ApiError with a message that says what to do next. */
  errorFrom(res: RawResponse): ApiError {
    let code = `http_${res.status}`;
    let message = `The API answered ${res.status}.`;
    let details: unknown;
    try {
      const parsed = ApiErrorBody.safeParse(JSON.parse(res.body.toString('utf8')));
      if (parsed.success) {
        code = parsed.data.error.code;
        message = parsed.data.error.message;
        details = parsed.data.error.details;
      }
    } catch {
      /* not JSON: keep the status line */
    }
    if (res.status === 401 && code === 'token_other_hub') {
      // The token is fine, the hub is not the one that made it: say so, and which hub this was.
      message = `${message}\nThis command talked to ${this.baseUrl} (DRYFT_API_URL, --api-url, or the hub bin/dryft was installed from).`;
    } else if (res.status === 401) {
      message = this.token
        ? `The API refused your token (${code}: ${message}).\n${tokenAdvice(this.tokenSource)}`
        : `This needs a team API token (${message}).\nSet DRYFT_TOKEN in this terminal or run \`dryft login\`; a team owner or admin creates tokens under Team → API tokens.`;
    } else if (res.status === 403) {
      message = `Not allowed (${code}): ${message}\nAPI tokens act for the team that created them; check that you are using the right team's token (\`dryft doctor\` shows it).`;
    } else if (res.status === 429 && code === 'rate_limited') {
      message = `Rate limited by the hub: ${message}${this.againAfter(res)}`;
    } else if (res.status === 503 && code === 'checker_busy') {
      message = `The hub is busy checking uploads: ${message}${this.againAfter(res)}`;
    } else if (res.status >= 500) {
      message = `The Dryft API failed (${res.status} ${code}): ${message}\nTry again in a minute; if it persists, contact the event organizer with the time and the command you ran.`;
    }
    return new ApiError(res.status, code, message, details);
  }

  /** When to run the command again after a refusal that `raw` stopped retrying, and what it tried. */
  private againAfter(res: RawResponse): string {
    const wait = busyWait(res)?.seconds;
    if (wait === undefined) return '';
    const at = new Date(Date.now() + wait * 1000);
    const tried = res.retries
      ? `; the CLI already waited and retried ${res.retries === 1 ? 'once' : `${res.retries} times`}.`
      : '.';
    return `\nRun the command again after ${at.toISOString().slice(11, 19)} UTC (in ${wait} s)${tried}`;
  }

  /** A JSON request checked against a schema; GETs are retried on network errors and 5xx. */
  async call<S extends z.ZodTypeAny>(
    schema: S,
    path: string,
    opts: RequestOptions = {},
  ): Promise<z.infer<S>> {
    const idempotent = (opts.method ?? 'GET') === 'GET';
    const attempts = idempotent ? 3 : 1;
    let last: unknown;
    for (let i = 0; i < attempts; i++) {
      if (i > 0) await sleep(this.retryBaseMs * 2 ** i);
      try {
        const res = await this.raw(path, opts);
        if (res.status >= 500 && idempotent && i < attempts - 1) {
          last = this.errorFrom(res);
          continue;
        }
        return this.parse(schema, res);
      } catch (err) {
        if (err instanceof NetworkError && idempotent && i < attempts - 1) {
          last = err;
          continue;
        }
        throw err;
      }
    }
    throw last;
  }

  parse<S extends z.ZodTypeAny>(schema: S, res: RawResponse): z.infer<S> {
    if (res.status < 200 || res.status >= 300) throw this.errorFrom(res);
    let json: unknown;
    try {
      json = JSON.parse(res.body.toString('utf8'));
    } catch {
      throw new CliError(
        EXIT.server,
        `The API at ${this.baseUrl} answered ${res.status} with something that is not JSON; is DRYFT_API_URL pointing at a Dryft hub?`,
      );
    }
    const parsed = schema.safeParse(json);
    if (!parsed.success) {
      throw new CliError(
        EXIT.server,
        `The API's answer does not match what this CLI (${CLI_VERSION}) expects: ${parsed.error.issues[0]?.path.join('.')}: ${parsed.error.issues[0]?.message}. Update the CLI (the starter's install-dryft.sh installs the hub's version).`,
      );
    }
    return parsed.data;
  }

  /**
   * POST with an Idempotency-Key that stays the same across retries of one intended action: a retry
   * after a network error, a timeout, a 5xx or a 409 "still in flight" can never create it twice.
   */
  async postIdempotent<S extends z.ZodTypeAny>(
    schema: S,
    path: string,
    json: unknown,
    opts: {
      key?: string;
      attempts?: number;
      onRetry?: (why: string, attempt: number) => void;
      baseDelayMs?: number;
    } = {},
  ): Promise<{ value: z.infer<S>; key: string; attempts: number }> {
    const key = opts.key ?? randomUUID();
    const attempts = opts.attempts ?? 5;
    const base = opts.baseDelayMs ?? 500;
    let lastErr: unknown;
    for (let i = 0; i < attempts; i++) {
      if (i > 0) await sleep(Math.min(8000, base * 2 ** (i - 1)));
      let res: RawResponse;
      try {
        res = await this.raw(path, { method: 'POST', json, headers: { 'idempotency-key': key } });
      } catch (err) {
        if (!(err instanceof NetworkError)) throw err;
        lastErr = err;
        opts.onRetry?.(err.reason, i + 1);
        continue;
      }
      if (res.status >= 500 || res.status === 409) {
        lastErr = this.errorFrom(res);
        opts.onRetry?.(`HTTP ${res.status}`, i + 1);
        continue;
      }
      return { value: this.parse(schema, res), key, attempts: i + 1 };
    }
    if (lastErr instanceof CliError) {
      lastErr.message += `\nThe request was retried ${attempts} times with Idempotency-Key ${key}; at most one run was created. Check with \`dryft runs\`.`;
    }
    throw lastErr;
  }
}

/** The refusals the hub makes before doing anything, so the same request may be sent again. */
const BUSY_CODES: Record<string, number> = { rate_limited: 429, checker_busy: 503 };

/**
 * The seconds a 429 `rate_limited` or 503 `checker_busy` answer asks to wait (`Retry-After`), with
 * its code; null for any other answer (a 429 daily run limit resets at midnight: not waited out).
 */
export function busyWait(res: RawResponse): { code: string; seconds: number } | null {
  if (res.status !== 429 && res.status !== 503) return null;
  const header = Number(res.headers['retry-after']);
  if (!res.headers['retry-after'] || !Number.isFinite(header) || header < 0) return null;
  try {
    const parsed = ApiErrorBody.safeParse(JSON.parse(res.body.toString('utf8')));
    if (!parsed.success || BUSY_CODES[parsed.data.error.code] !== res.status) return null;
    return { code: parsed.data.error.code, seconds: Math.ceil(header) };
  } catch {
    return null;
  }
}

function serverMessage(res: RawResponse): string | null {
  try {
    const parsed = ApiErrorBody.safeParse(JSON.parse(res.body.toString('utf8')));
    return parsed.success ? parsed.data.error.message : null;
  } catch {
    return null;
  }
}

export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/** A multipart/form-data body with text fields and one file. */
export function multipart(
  fields: Record<string, string>,
  file: { field: string; name: string; content: Buffer; type?: string },
): { body: Buffer; contentType: string } {
  const boundary = `----dryft${randomUUID().replace(/-/g, '')}`;
  const parts: Buffer[] = [];
  for (const [k, v] of Object.entries(fields)) {
    parts.push(Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="${k}"\r\n\r\n${v}\r\n`));
  }
  parts.push(
    Buffer.from(
      `--${boundary}\r\nContent-Disposition: form-data; name="${file.field}"; filename="${file.name.replace(/"/g, '')}"\r\nContent-Type: ${file.type ?? 'application/octet-stream'}\r\n\r\n`,
    ),
  );
  parts.push(file.content);
  parts.push(Buffer.from(`\r\n--${boundary}--\r\n`));
  return { body: Buffer.concat(parts), contentType: `multipart/form-data; boundary=${boundary}` };
}
