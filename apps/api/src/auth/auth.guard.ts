import { CanActivate, ExecutionContext, Injectable } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { timingSafeEqual } from 'node:crypto';
import { AppError, forbidden, unauthorized } from '../common/errors';
import { AuthedRequest, PUBLIC_ROUTE } from '../common/principal';
import { trackedIp } from '../rate-limits/client-ip';
import { RateLimiter } from '../rate-limits/rate-limiter';
import { AuthService, CSRF_HEADER, SESSION_COOKIE } from './auth.service';

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/**
 * Global guard: resolves the principal for every request, refuses unauthenticated calls to private
 * routes, and demands the CSRF token for state-changing requests made with the session cookie
 * (bearer-token requests carry no ambient credential, so they need none). Refused tokens are
 * counted per address (RATE_LIMIT_AUTH_FAILURES): past the limit, every token request from that
 * address is answered 429 before its token is even looked at, so tokens cannot be guessed at speed.
 */
@Injectable()
export class AuthGuard implements CanActivate {
  constructor(
    private readonly auth: AuthService,
    private readonly reflector: Reflector,
    private readonly limiter: RateLimiter,
  ) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    if (context.getType() !== 'http') return true;
    const req = context.switchToHttp().getRequest<AuthedRequest>();
    const isPublic = this.reflector.getAllAndOverride<boolean>(PUBLIC_ROUTE, [
      context.getHandler(),
      context.getClass(),
    ]);
    const authorization = req.headers.authorization;
    const res = context.switchToHttp().getResponse<{ setHeader(n: string, v: string): unknown }>();
    const ip = trackedIp(req.ip);
    if (authorization) await this.limiter.assertTokensAllowed(ip, res);
    let principal;
    try {
      principal = await this.auth.authenticate({
        authorization,
        sessionCookie: (req as { cookies?: Record<string, string> }).cookies?.[SESSION_COOKIE],
      });
    } catch (err) {
      if (authorization && err instanceof AppError && err.status === 401)
        await this.limiter.tokenFailed(ip, res);
      throw err;
    }
    req.principal = principal;
    if (!principal) {
      if (isPublic) return true;
      throw unauthorized(
        'sign_in_required',
        'Sign in, or send a team API token as "Authorization: Bearer dryft_pat_…".',
      );
    }
    if (principal.via === 'session' && !SAFE_METHODS.has(req.method)) {
      const sent = String(req.headers[CSRF_HEADER] ?? '');
      const expected = principal.session!.csrfToken;
      const ok = sent.length === expected.length && timingSafeEqual(Buffer.from(sent), Buffer.from(expected));
      if (!ok)
        throw forbidden(
          'csrf_failed',
          'Missing or wrong X-CSRF-Token header: reload the page and try again.',
        );
    }
    return true;
  }
}
