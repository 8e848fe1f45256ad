import { Inject, Injectable } from '@nestjs/common';
import { PassportStrategy } from '@nestjs/passport';
import { Strategy, Profile } from 'passport-github2';
import { CONFIG, Config } from '../../config/config';
import { UsersService } from '../../users/users.service';
import { CookieStateStore } from '../oauth-state.store';

/**
 * GitHub OAuth through passport-github2. The web and API base URLs come from the config, so tests
 * run the whole dance against a local stand-in server.
 */
@Injectable()
export class GithubStrategy extends PassportStrategy(Strategy, 'github') {
  constructor(
    @Inject(CONFIG) config: Config,
    private readonly users: UsersService,
  ) {
    const web = config.GITHUB_WEB_URL.replace(/\/$/, '');
    const api = config.GITHUB_API_URL.replace(/\/$/, '');
    super({
      clientID: config.GITHUB_CLIENT_ID ?? 'unconfigured',
      clientSecret: config.GITHUB_CLIENT_SECRET ?? 'unconfigured',
      callbackURL: `${config.PUBLIC_URL.replace(/\/$/, '')}/api/auth/github/callback`,
      authorizationURL: `${web}/login/oauth/authorize`,
      tokenURL: `${web}/login/oauth/access_token`,
      userProfileURL: `${api}/user`,
      scope: ['read:user'],
      store: new CookieStateStore(config.cookieSecure) as never,
    });
  }

  async validate(_accessToken: string, _refreshToken: string, profile: Profile) {
    const json = (profile as Profile & { _json?: { avatar_url?: string; name?: string } })._json ?? {};
    return this.users.upsertFromGithub({
      id: String(profile.id),
      login: profile.username ?? String(profile.id),
      name: json.name ?? profile.displayName ?? null,
      avatarUrl: json.avatar_url ?? null,
    });
  }
}
