import {
  Body,
  CanActivate,
  Controller,
  Get,
  HttpCode,
  Inject,
  Injectable,
  Post,
  Req,
  Res,
  UseGuards,
} from '@nestjs/common';
import { AuthGuard as PassportGuard } from '@nestjs/passport';
import type { Request, Response } from 'express';
import type { MeView } from '@dryft/libs';
import { notFound } from '../common/errors';
import { CurrentPrincipal, Principal, Public } from '../common/principal';
import { CONFIG, Config } from '../config/config';
import { RateLimit } from '../rate-limits/rate-limit.guard';
import { UserEntity } from '../users/user.entity';
import { AuthService, CSRF_COOKIE, SESSION_COOKIE } from './auth.service';
import { DevSignInDto } from './dto';

/** Refuses the GitHub routes with a clear message when no OAuth client is configured. */
@Injectable()
export class GithubGate implements CanActivate {
  constructor(@Inject(CONFIG) private readonly config: Config) {}
  canActivate(): boolean {
    if (!this.config.githubOAuthConfigured) {
      throw notFound(
        'github_sign_in_unconfigured',
        'GitHub sign-in is not configured on this hub (GITHUB_CLIENT_ID/GITHUB_CLIENT_SECRET).',
      );
    }
    return true;
  }
}

@Controller('api/auth')
export class AuthController {
  constructor(
    private readonly auth: AuthService,
    @Inject(CONFIG) private readonly config: Config,
  ) {}

  @Public()
  @Get('config')
  authConfig() {
    return { github: this.config.githubOAuthConfigured, dev: this.auth.devSignInEnabled };
  }

  @Public()
  @Post('dev')
  @HttpCode(200)
  @RateLimit('signin')
  async dev(@Body() body: DevSignInDto, @Res({ passthrough: true }) res: Response): Promise<MeView> {
    const user = await this.auth.devSignIn(body.login);
    return this.signIn(user, res);
  }

  @Public()
  @Get('github')
  @UseGuards(GithubGate, PassportGuard('github'))
  @RateLimit('signin')
  github(): void {
    // Passport redirects to GitHub before this runs.
  }

  @Public()
  @Get('github/callback')
  @UseGuards(GithubGate, PassportGuard('github'))
  @RateLimit('signin')
  async githubCallback(@Req() req: Request, @Res() res: Response): Promise<void> {
    await this.signIn(req.user as UserEntity, res);
    res.redirect(302, '/');
  }

  @Post('logout')
  @HttpCode(200)
  async logout(@CurrentPrincipal() principal: Principal, @Res({ passthrough: true }) res: Response) {
    await this.auth.endSession(principal);
    res.clearCookie(SESSION_COOKIE, { path: '/' });
    res.clearCookie(CSRF_COOKIE, { path: '/' });
    return { signedOut: true };
  }

  private async signIn(user: UserEntity, res: Response): Promise<MeView> {
    const session = await this.auth.startSession(user);
    const base = {
      sameSite: 'lax' as const,
      secure: this.config.cookieSecure,
      path: '/',
      expires: session.expiresAt,
    };
    res.cookie(SESSION_COOKIE, session.cookie, { ...base, httpOnly: true });
    // Readable by the web app, which echoes it in X-CSRF-Token; useless to another site.
    res.cookie(CSRF_COOKIE, session.csrfToken, { ...base, httpOnly: false });
    const principal = await this.auth.authenticate({ sessionCookie: session.cookie });
    return this.auth.me(principal!);
  }
}
