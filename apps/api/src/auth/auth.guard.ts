import { CanActivate, ExecutionContext, Injectable } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { timingSafeEqual } from 'node:crypto';
import { forbidden, unauthorized } from '../common/errors';
import { AuthedRequest, PUBLIC_ROUTE } from '../common/principal';
import { AuthService, CSRF_HEADER, SESSION_COOKIE } from './auth.service';

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/**
 * Global guard: resolves the principal for every request, refuses unauthenticated calls to private
 * routes, and demands the CSRF token for state-changing requests made with the session cookie
 * (bearer-token requests carry no ambient credential, so they need none).
 */
@Injectable()
export class AuthGuard implements CanActivate {
  constructor(
    private readonly auth: AuthService,
    private readonly reflector: Reflector,
  ) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    if (context.getType() !== 'http') return true;
    const req = context.switchToHttp().getRequest<AuthedRequest>();
    const isPublic = this.reflector.getAllAndOverride<boolean>(PUBLIC_ROUTE, [
      context.getHandler(),
      context.getClass(),
    ]);
    const principal = await this.auth.authenticate({
      authorization: req.headers.authorization,
      sessionCookie: (req as { cookies?: Record<string, string> }).cookies?.[SESSION_COOKIE],
    });
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
