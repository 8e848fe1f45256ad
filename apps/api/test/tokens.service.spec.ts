import { describe, expect, it, vi } from 'vitest';
import { generateToken, hashToken } from '@dryft/libs/node';
import { Clock } from '../src/common/clock';
import type { EventBus } from '../src/common/event-bus';
import type { Config } from '../src/config/config';
import { AppError } from '../src/common/errors';
import type { TeamsService } from '../src/teams/teams.service';
import type { TokensRepository } from '../src/tokens/tokens.repository';
import { TokensService } from '../src/tokens/tokens.service';
import type { UsersService } from '../src/users/users.service';
import { anApiToken, aUser } from './builders';

function setup(stored: ReturnType<typeof anApiToken> | null, opts: { member?: boolean; now?: Date } = {}) {
  const creator = aUser();
  const repo = {
    findByHash: vi.fn(async () => stored),
    touch: vi.fn(async () => undefined),
    hubTag: vi.fn(async () => 'Hub1'),
  };
  const users = { findById: vi.fn(async () => creator), isAdmin: () => false } as unknown as UsersService;
  const teams = { isMember: vi.fn(async () => opts.member ?? true) } as unknown as TeamsService;
  const clock = { now: () => opts.now ?? new Date() } as Clock;
  const bus = { emit: () => undefined } as unknown as EventBus;
  const config = { PUBLIC_URL: 'https://dryft.example.org' } as Config;
  return {
    service: new TokensService(repo as unknown as TokensRepository, teams, users, clock, bus, config),
    repo,
  };
}

const code = async (p: Promise<unknown>) => {
  try {
    await p;
    return 'accepted';
  } catch (err) {
    return (err as AppError).code;
  }
};

describe('TokensService.authenticate', () => {
  it('refuses malformed and bad-checksum tokens without touching the repository', async () => {
    const { service, repo } = setup(null);
    expect(await code(service.authenticate('dryft_pat_x'))).toBe('token_malformed');
    const t = generateToken('pat');
    expect(await code(service.authenticate(t.slice(0, -2) + (t.endsWith('zz') ? 'yy' : 'zz')))).toBe(
      'token_bad_checksum',
    );
    expect(await code(service.authenticate(generateToken('agent')))).toBe('token_malformed');
    expect(repo.findByHash).not.toHaveBeenCalled();
  });

  it('looks a well-formed token up by hash and acts for its team', async () => {
    const value = generateToken('pat');
    const stored = anApiToken({ tokenHash: hashToken(value) });
    const { service, repo } = setup(stored);
    const principal = await service.authenticate(value);
    expect(repo.findByHash).toHaveBeenCalledWith(hashToken(value));
    expect(principal).toMatchObject({ via: 'token', teamId: stored.teamId, tokenId: stored.id });
  });

  it.each([
    [{ revokedAt: new Date() }, {}, 'token_revoked'],
    [{ expiresAt: new Date(Date.now() - 1000) }, {}, 'token_expired'],
    [{}, { member: false }, 'token_creator_left'],
  ])('refuses %o %o with %s', async (over, opts, expected) => {
    const { service } = setup(anApiToken(over), opts);
    expect(await code(service.authenticate(generateToken('pat')))).toBe(expected);
  });

  it('refuses an unknown token of this hub as unknown, and one of another hub as another hub’s', async () => {
    const { service } = setup(null);
    expect(await code(service.authenticate(generateToken('pat', 'Hub1')))).toBe('token_invalid');
    const other = generateToken('pat', 'Zz99');
    expect(await code(service.authenticate(other))).toBe('token_other_hub');
    const err = await service.authenticate(other).catch((e: AppError) => e);
    expect((err as AppError).message).toMatch(
      /^This token belongs to another hub \(it starts dryft_pat_Zz99…, tokens of this hub at https:\/\/dryft\.example\.org start dryft_pat_Hub1…\)\./,
    );
  });
});
