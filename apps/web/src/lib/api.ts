import { ApiErrorBody } from '@dryft/libs';

/** An API refusal: `{ error: { code, message, details } }` with its HTTP status. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly details?: unknown,
    /** A request refused before it was done (429 `rate_limited`, 503 `checker_busy`): its `Retry-After`. */
    readonly retryAfterSeconds: number | null = null,
  ) {
    super(message);
  }
}

/**
 * The words of a rate-limited request: the hub's message (what was limited, for how long, the
 * time in UTC), and the moment to try again on this browser's clock.
 */
export function rateLimitedMessage(message: string, retryAfterSeconds: number, now = new Date()): string {
  const at = new Date(now.getTime() + retryAfterSeconds * 1000);
  const local = at.toLocaleTimeString(undefined, { hour: '2-digit', minute: '2-digit', second: '2-digit' });
  return `${message} (You can try again at ${local}.)`;
}

export const CSRF_COOKIE = 'dryft_csrf';
let csrfFallback: string | null = null;

/** /api/me also returns the CSRF token; kept here in case the cookie is not readable. */
export function setCsrfToken(token: string | null): void {
  csrfFallback = token;
}

export function readCookie(cookieHeader: string, name: string): string | null {
  for (const part of cookieHeader.split(';')) {
    const eq = part.indexOf('=');
    if (eq < 0) continue;
    if (part.slice(0, eq).trim() === name) return decodeURIComponent(part.slice(eq + 1).trim());
  }
  return null;
}

export function csrfToken(): string | null {
  const fromCookie = typeof document === 'undefined' ? null : readCookie(document.cookie, CSRF_COOKIE);
  return fromCookie ?? csrfFallback;
}

/** A fresh idempotency key for one intended action; reuse it when retrying that action. */
export function newIdempotencyKey(): string {
  if (typeof crypto.randomUUID === 'function') return crypto.randomUUID();
  const b = crypto.getRandomValues(new Uint8Array(16));
  return [...b].map((x) => x.toString(16).padStart(2, '0')).join('');
}

export interface RequestOptions {
  method?: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  body?: unknown;
  form?: FormData;
  headers?: Record<string, string>;
  signal?: AbortSignal;
  /** Told of each wait before the request is sent again (besides the page-wide notice). */
  onRetry?: (message: string, seconds: number) => void;
}

/**
 * The refusals the hub makes before doing or storing anything, so the same request (with the same
 * Idempotency-Key) may be sent again after the `Retry-After` they carry: the status each comes with.
 */
const BUSY_CODES: Record<string, number> = { rate_limited: 429, checker_busy: 503 };
/** The most times one request is sent again after such a refusal. */
export const BUSY_RETRIES = 3;
/** The most seconds one request waits in all before the refusal is shown instead. */
export const BUSY_WAIT_MAX_SECONDS = 60;

/** What the page says while a request waits to be sent again. */
export function busyNotice(code: string, seconds: number): string {
  return code === 'checker_busy'
    ? `The hub is busy checking uploads; retrying in ${seconds} s.`
    : `The hub is rate limiting requests; retrying in ${seconds} s.`;
}

/** The waits in progress, for the page-wide notice (layout): their words, newest last. */
type RetryListener = (messages: string[]) => void;
const retryListeners = new Set<RetryListener>();
const retrying = new Map<number, string>();
let nextRetryId = 1;

export function onRetryNotices(listener: RetryListener): () => void {
  retryListeners.add(listener);
  listener([...retrying.values()]);
  return () => void retryListeners.delete(listener);
}

function setRetrying(id: number, message: string | null): void {
  if (message === null) retrying.delete(id);
  else retrying.set(id, message);
  const messages = [...retrying.values()];
  for (const l of retryListeners) l(messages);
}

/** The `Retry-After` of a refusal that may be sent again as it is, with its code; else null. */
async function busyWait(res: Response): Promise<{ code: string; seconds: number } | null> {
  if (res.status !== 429 && res.status !== 503) return null;
  const header = res.headers.get('retry-after');
  const seconds = Number(header);
  if (!header || !Number.isFinite(seconds) || seconds < 0) return null;
  try {
    const parsed = ApiErrorBody.safeParse(await res.clone().json());
    if (!parsed.success || BUSY_CODES[parsed.data.error.code] !== res.status) return null;
    return { code: parsed.data.error.code, seconds: Math.ceil(seconds) };
  } catch {
    return null;
  }
}

function wait(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', abort);
      resolve();
    }, ms);
    const abort = () => {
      clearTimeout(timer);
      reject(signal!.reason);
    };
    signal?.addEventListener('abort', abort, { once: true });
  });
}

/** Turns any response into the value or an ApiError with the API's own message. */
export async function parseResponse<T>(res: Response): Promise<T> {
  const text = await res.text();
  let json: unknown = undefined;
  if (text) {
    try {
      json = JSON.parse(text);
    } catch {
      json = undefined;
    }
  }
  if (res.ok) return json as T;
  const parsed = ApiErrorBody.safeParse(json);
  if (parsed.success) {
    const retryAfter = Number(res.headers.get('retry-after'));
    if (BUSY_CODES[parsed.data.error.code] === res.status && retryAfter > 0)
      throw new ApiError(
        res.status,
        parsed.data.error.code,
        rateLimitedMessage(parsed.data.error.message, retryAfter),
        parsed.data.error.details,
        retryAfter,
      );
    throw new ApiError(
      res.status,
      parsed.data.error.code,
      parsed.data.error.message,
      parsed.data.error.details,
    );
  }
  const fallback =
    res.status === 404
      ? 'Not found on this hub.'
      : res.status >= 500
        ? `The hub answered ${res.status}: try again in a moment.`
        : `The hub answered ${res.status} ${res.statusText}.`;
  throw new ApiError(res.status, `http_${res.status}`, fallback);
}

/**
 * fetch for the same-origin API: JSON in and out, the CSRF header on every state change. A request
 * refused with 429 `rate_limited` or 503 `checker_busy` (refused before anything was done or stored)
 * is sent again, the same, after its `Retry-After`, saying so on the page: up to BUSY_RETRIES times
 * and BUSY_WAIT_MAX_SECONDS of waiting in all; past that the refusal is thrown with when to retry.
 */
export async function api<T>(path: string, opts: RequestOptions = {}): Promise<T> {
  const id = nextRetryId++;
  let waited = 0;
  try {
    for (let retries = 0; ; retries++) {
      const res = await send(path, opts);
      const busy = retries < BUSY_RETRIES ? await busyWait(res) : null;
      if (!busy || waited + busy.seconds > BUSY_WAIT_MAX_SECONDS) return await parseResponse<T>(res);
      const message = busyNotice(busy.code, busy.seconds);
      setRetrying(id, message);
      opts.onRetry?.(message, busy.seconds);
      waited += busy.seconds;
      await wait(busy.seconds * 1000, opts.signal);
    }
  } finally {
    if (retrying.has(id)) setRetrying(id, null);
  }
}

async function send(path: string, opts: RequestOptions): Promise<Response> {
  const method = opts.method ?? (opts.body !== undefined || opts.form ? 'POST' : 'GET');
  const headers: Record<string, string> = { Accept: 'application/json', ...opts.headers };
  if (method !== 'GET') {
    const token = csrfToken();
    if (token) headers['X-CSRF-Token'] = token;
  }
  let body: BodyInit | undefined;
  if (opts.form) body = opts.form;
  else if (opts.body !== undefined) {
    headers['Content-Type'] = 'application/json';
    body = JSON.stringify(opts.body);
  }
  try {
    // 'no-cache': the app's own reads always revalidate (a public read answers 304 from memory), so
    // a change shows at once in the tab that made it, whatever max-age the response carries.
    return await fetch(path, {
      method,
      headers,
      body,
      credentials: 'same-origin',
      signal: opts.signal,
      cache: 'no-cache',
    });
  } catch (err) {
    if ((err as Error).name === 'AbortError') throw err;
    throw new ApiError(0, 'network', 'Cannot reach the hub: check your connection and try again.');
  }
}

export function errorMessage(err: unknown): string {
  if (err instanceof ApiError) return err.message;
  if (err instanceof Error) return err.message;
  return String(err);
}

/** Lists come either as a bare array or as `{ items }`. */
export function itemsOf<T>(value: unknown): T[] {
  if (Array.isArray(value)) return value as T[];
  if (value && typeof value === 'object') {
    const v = value as Record<string, unknown>;
    for (const key of ['items', 'quotas', 'agents', 'entries'])
      if (Array.isArray(v[key])) return v[key] as T[];
  }
  return [];
}
