import { applyDecorators, ExecutionContext, Injectable, SetMetadata, UseGuards } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import {
  InjectThrottlerOptions,
  InjectThrottlerStorage,
  ThrottlerGuard,
  type ThrottlerModuleOptions,
  type ThrottlerRequest,
} from '@nestjs/throttler';
import type { AuthedRequest } from '../common/principal';
import { trackedIp } from './client-ip';
import type { RateLimitStorage } from './rate-limit-storage';
import { RateLimiter, RouteLimit, trackerOf } from './rate-limiter';

const RATE_LIMITS = 'dryft:rate-limits';
const reflector = new Reflector();

/** The limits a route is counted against (the throttlers of the others skip it). */
export function routeLimits(context: ExecutionContext): RouteLimit[] {
  return (
    reflector.getAllAndOverride<RouteLimit[]>(RATE_LIMITS, [context.getHandler(), context.getClass()]) ?? []
  );
}

/**
 * The @nestjs/throttler guard with Dryft's rules: a route counts only against the limits it names
 * (`@RateLimit('join')`); a limit counts per team API token, else per signed-in user, else per
 * address (sign-ins always per address), one count per limit across its routes (team and token
 * creation share `create`); a refusal is 429 `rate_limited` with `Retry-After` and when to retry,
 * and the first refusal of a join lockout is audited. It runs after the global AuthGuard, so the
 * caller is known.
 */
@Injectable()
export class RateLimitGuard extends ThrottlerGuard {
  constructor(
    @InjectThrottlerOptions() options: ThrottlerModuleOptions,
    @InjectThrottlerStorage() storage: RateLimitStorage,
    reflector: Reflector,
    private readonly limiter: RateLimiter,
  ) {
    super(options, storage, reflector);
  }

  protected override async handleRequest(props: ThrottlerRequest): Promise<boolean> {
    const { context, limit, ttl, throttler, blockDuration } = props;
    const name = throttler.name as RouteLimit;
    const { req, res } = this.getRequestResponse(context) as {
      req: AuthedRequest;
      res: { setHeader(n: string, v: string): unknown };
    };
    const ip = trackedIp(req.ip);
    const tracker = name === 'signin' ? `ip:${ip}` : trackerOf(req.principal, ip);
    const record = await (this.storageService as RateLimitStorage).increment(
      tracker,
      ttl,
      limit,
      blockDuration,
      name,
    );
    if (!record.isBlocked) return true;
    if (name === 'join' && record.blockStarted && req.principal)
      await this.limiter.joinLocked(req.principal, record, ip);
    throw this.limiter.refusal(name, record, res);
  }
}

/** Counts the route against these limits (docs/API.md "Rate limits"). */
export const RateLimit = (...names: RouteLimit[]) =>
  applyDecorators(SetMetadata(RATE_LIMITS, names), UseGuards(RateLimitGuard));
