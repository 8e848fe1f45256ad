import { Inject, Injectable } from '@nestjs/common';
import type { UserView } from '@dryft/libs';
import { EventBus } from '../common/event-bus';
import { CONFIG, Config } from '../config/config';
import { UserEntity } from './user.entity';
import { UsersRepository } from './users.repository';

export interface GithubProfile {
  id: string;
  login: string;
  name: string | null;
  avatarUrl: string | null;
}

@Injectable()
export class UsersService {
  constructor(
    private readonly users: UsersRepository,
    @Inject(CONFIG) private readonly config: Config,
    private readonly bus: EventBus,
  ) {}

  isAdmin(user: UserEntity): boolean {
    const login = user.login.toLowerCase();
    return this.config.ADMIN_LOGINS.some((l) => l.toLowerCase() === login);
  }

  view(user: UserEntity): UserView {
    return {
      id: user.id,
      login: user.login,
      name: user.name,
      avatarUrl: user.avatarUrl,
      isAdmin: this.isAdmin(user),
    };
  }

  /** GitHub sign-in: the numeric id is the identity; the login may change on GitHub's side. */
  async upsertFromGithub(profile: GithubProfile): Promise<UserEntity> {
    const existing = await this.users.findByGithubId(profile.id);
    if (existing) {
      const saved = await this.users.save({
        ...existing,
        login: profile.login,
        name: profile.name,
        avatarUrl: profile.avatarUrl,
      });
      if (
        existing.login !== profile.login ||
        existing.name !== profile.name ||
        existing.avatarUrl !== profile.avatarUrl
      )
        this.bus.emit('user.profile_changed', { userId: existing.id });
      return saved;
    }
    const sameLogin = await this.users.findByLogin(profile.login);
    if (sameLogin && sameLogin.githubId === null) {
      // A dev sign-in user with this login becomes the GitHub user (development databases only).
      const saved = await this.users.save({
        ...sameLogin,
        githubId: profile.id,
        name: profile.name,
        avatarUrl: profile.avatarUrl,
      });
      this.bus.emit('user.profile_changed', { userId: sameLogin.id });
      return saved;
    }
    if (sameLogin) {
      // GitHub reassigned the login: the old holder keeps their account under a marked login.
      await this.users.save({ ...sameLogin, login: `${sameLogin.login}~${sameLogin.githubId}` });
      this.bus.emit('user.profile_changed', { userId: sameLogin.id });
    }
    return this.users.save({
      githubId: profile.id,
      login: profile.login,
      name: profile.name,
      avatarUrl: profile.avatarUrl,
    });
  }

  async findOrCreateDevUser(login: string): Promise<UserEntity> {
    return (
      (await this.users.findByLogin(login)) ??
      this.users.save({ login, githubId: null, name: null, avatarUrl: null })
    );
  }

  findById(id: string): Promise<UserEntity | null> {
    return this.users.findById(id);
  }

  findByLogin(login: string): Promise<UserEntity | null> {
    return this.users.findByLogin(login);
  }

  findByIds(ids: string[]): Promise<UserEntity[]> {
    return this.users.findByIds(ids);
  }
}
