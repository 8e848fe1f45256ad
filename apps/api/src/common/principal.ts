import { createParamDecorator, ExecutionContext, SetMetadata } from '@nestjs/common';
import type { Request } from 'express';
import type { SessionEntity } from '../auth/session.entity';
import type { UserEntity } from '../users/user.entity';

/** Who is calling: a signed-in browser (session) or a script holding a team API token. */
export interface Principal {
  user: UserEntity;
  isAdmin: boolean;
  via: 'session' | 'token';
  /** The session's active team, or the token's team. */
  teamId: string | null;
  session?: SessionEntity;
  tokenId?: string;
  /** When the session or token stops working (null: a token without expiry). */
  expiresAt?: Date | null;
}

export type AuthedRequest = Request & { principal?: Principal | null };

export const PUBLIC_ROUTE = 'dryft:public';
/** The route answers without sign-in (a principal is still resolved when credentials are sent). */
export const Public = () => SetMetadata(PUBLIC_ROUTE, true);

export const CurrentPrincipal = createParamDecorator((_data: unknown, ctx: ExecutionContext) => {
  const req = ctx.switchToHttp().getRequest<AuthedRequest>();
  return req.principal ?? null;
});
