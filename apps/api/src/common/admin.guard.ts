import { CanActivate, ExecutionContext, Injectable } from '@nestjs/common';
import { forbidden } from './errors';
import type { AuthedRequest } from './principal';

/** Organizer routes: signed in (not a team token) with a login listed in ADMIN_LOGINS. */
@Injectable()
export class AdminGuard implements CanActivate {
  canActivate(context: ExecutionContext): boolean {
    const principal = context.switchToHttp().getRequest<AuthedRequest>().principal;
    if (!principal?.isAdmin || principal.via !== 'session') {
      throw forbidden('organizers_only', 'Only organizers (ADMIN_LOGINS) signed in to the web can do this.');
    }
    return true;
  }
}
