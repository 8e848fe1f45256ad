import { ApiErrorBody } from '@dryft/libs';

/** An API refusal: `{ error: { code, message, details } }` with its HTTP status. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly details?: unknown,
  ) {
    super(message);
  }
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
  if (parsed.success)
    throw new ApiError(
      res.status,
      parsed.data.error.code,
      parsed.data.error.message,
      parsed.data.error.details,
    );
  const fallback =
    res.status === 404
      ? 'Not found on this hub.'
      : res.status >= 500
        ? `The hub answered ${res.status}: try again in a moment.`
        : `The hub answered ${res.status} ${res.statusText}.`;
  throw new ApiError(res.status, `http_${res.status}`, fallback);
}

/** fetch for the same-origin API: JSON in and out, the CSRF header on every state change. */
export async function api<T>(path: string, opts: RequestOptions = {}): Promise<T> {
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
  let res: Response;
  try {
    // 'no-cache': the app's own reads always revalidate (a public read answers 304 from memory), so
    // a change shows at once in the tab that made it, whatever max-age the response carries.
    res = await fetch(path, {
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
  return parseResponse<T>(res);
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
