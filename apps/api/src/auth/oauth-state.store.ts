import { randomBytes, timingSafeEqual } from 'node:crypto';
import type { Request } from 'express';

export const OAUTH_STATE_COOKIE = 'dryft_oauth_state';

/**
 * OAuth `state` kept in a short-lived httpOnly cookie instead of a server session: the callback
 * must come back to the browser that started the dance, which defeats login CSRF.
 */
export class CookieStateStore {
  constructor(private readonly secure: boolean) {}

  store(req: Request, ...rest: unknown[]): void {
    const callback = rest[rest.length - 1] as (err: Error | null, state?: string) => void;
    const state = randomBytes(24).toString('base64url');
    req.res?.cookie(OAUTH_STATE_COOKIE, state, {
      httpOnly: true,
      sameSite: 'lax',
      secure: this.secure,
      maxAge: 10 * 60_000,
      path: '/api/auth',
    });
    callback(null, state);
  }

  verify(req: Request, provided: string, ...rest: unknown[]): void {
    const callback = rest[rest.length - 1] as (
      err: Error | null,
      ok: boolean,
      info?: { message: string },
    ) => void;
    const expected = (req as { cookies?: Record<string, string> }).cookies?.[OAUTH_STATE_COOKIE] ?? '';
    req.res?.clearCookie(OAUTH_STATE_COOKIE, { path: '/api/auth' });
    const ok =
      expected.length > 0 &&
      expected.length === provided.length &&
      timingSafeEqual(Buffer.from(expected), Buffer.from(provided));
    callback(
      null,
      ok,
      ok ? undefined : { message: 'The sign-in link expired or came from another browser; sign in again.' },
    );
  }
}
