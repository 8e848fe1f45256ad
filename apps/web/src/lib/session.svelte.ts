import type { MeView, TeamSummary } from '@dryft/libs';
import { api, ApiError, csrfToken, setCsrfToken } from './api';
import { resetLive } from './live';

export interface AuthConfig {
  github: boolean;
  dev: boolean;
}

/** Who is signed in, their teams and the active one: one shared, reactive object. */
class Session {
  me = $state<MeView | null>(null);
  loaded = $state(false);
  error = $state<string | null>(null);
  authConfig = $state<AuthConfig | null>(null);

  get activeTeam(): TeamSummary | null {
    const me = this.me;
    if (!me) return null;
    return me.teams.find((t) => t.id === me.activeTeamId) ?? null;
  }

  get canManageTeam(): boolean {
    const role = this.activeTeam?.role;
    return role === 'owner' || role === 'admin';
  }

  set(me: MeView | null): void {
    this.me = me;
    setCsrfToken(me?.csrfToken ?? null);
  }

  async load(): Promise<void> {
    // The session cookie is httpOnly, but its readable CSRF twin is set and cleared with it:
    // without it nobody is signed in, and asking /api/me would only log a 401.
    if (!csrfToken()) {
      this.set(null);
      this.error = null;
      this.loaded = true;
      return;
    }
    try {
      this.set(await api<MeView>('/api/me'));
      this.error = null;
    } catch (err) {
      if (err instanceof ApiError && err.status === 401) {
        this.set(null);
        this.error = null;
      } else {
        this.error = (err as Error).message;
      }
    } finally {
      this.loaded = true;
    }
  }

  async loadAuthConfig(): Promise<AuthConfig> {
    if (!this.authConfig) this.authConfig = await api<AuthConfig>('/api/auth/config');
    return this.authConfig;
  }

  async devSignIn(login: string): Promise<void> {
    const me = await api<MeView>('/api/auth/dev', { body: { login } });
    this.set(me);
    resetLive();
  }

  async switchTeam(teamId: string): Promise<void> {
    this.set(await api<MeView>('/api/me/active-team', { body: { teamId } }));
  }

  async signOut(): Promise<void> {
    await api('/api/auth/logout', { method: 'POST', body: {} });
    this.set(null);
    resetLive();
  }
}

export const session = new Session();
