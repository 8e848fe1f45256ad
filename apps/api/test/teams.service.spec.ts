import type { BanPolicy } from '../src/bans/ban-policy';
import { beforeEach, describe, expect, it, vi } from 'vitest';
import type { BenchmarksService } from '../src/benchmarks/benchmarks.service';
import { AppError } from '../src/common/errors';
import { EventBus } from '../src/common/event-bus';
import type { MembershipEntity } from '../src/teams/membership.entity';
import type { TeamsRepository } from '../src/teams/teams.repository';
import { TeamsService } from '../src/teams/teams.service';
import type { UsersService } from '../src/users/users.service';
import { aMembership, aSession, aTeam, aTokenPrincipal, aUser } from './builders';

/** The team rules with the repository mocked: no database, only decisions. */
function setup(members: MembershipEntity[], team = aTeam()) {
  const repo = {
    findMembership: vi.fn(
      async (teamId: string, userId: string) =>
        members.find((m) => m.teamId === teamId && m.userId === userId) ?? null,
    ),
    lockMembers: vi.fn(async () => members),
    listMembers: vi.fn(async () => members),
    findById: vi.fn(async () => team),
    setRole: vi.fn(async () => undefined),
    removeMember: vi.fn(async () => undefined),
    addMember: vi.fn(async () => undefined),
    findByInviteCode: vi.fn(async (code: string) => (code === team.inviteCode ? team : null)),
    transaction: vi.fn(async (work: (tx: unknown) => Promise<unknown>) => work(repo)),
  };
  const users = {
    findByIds: vi.fn(async (ids: string[]) => ids.map((id) => aUser({ id, login: id.slice(0, 6) }))),
  } as unknown as UsersService;
  const benchmarks = { anyOpenForSubmissions: vi.fn(async () => true) } as unknown as BenchmarksService;
  const bus = new EventBus();
  const bans = { assertCanJoinTeams: vi.fn(async () => undefined) } as unknown as BanPolicy;
  const service = new TeamsService(repo as unknown as TeamsRepository, users, benchmarks, bus, bans);
  return { service, repo, bus, team, benchmarks };
}

async function refusal(p: Promise<unknown>): Promise<AppError> {
  try {
    await p;
  } catch (err) {
    if (err instanceof AppError) return err;
    throw err;
  }
  throw new Error('expected a refusal');
}

describe('TeamsService', () => {
  const owner = aUser({ login: 'owner' });
  const admin = aUser({ login: 'admin' });
  const member = aUser({ login: 'member' });
  let team: ReturnType<typeof aTeam>;
  beforeEach(() => {
    team = aTeam();
  });

  it('hides a team from non-members with 404 and names the role that is missing with 403', async () => {
    const { service } = setup([aMembership(team.id, member.id)], team);
    expect((await refusal(service.authorize(aSession(aUser()), team.id, 'read'))).status).toBe(404);
    const err = await refusal(service.authorize(aSession(member), team.id, 'manage_tokens'));
    expect(err.status).toBe(403);
    expect(err.message).toMatch(/owners and admins/);
  });

  it('gives API tokens member permissions on their own team only', async () => {
    const { service } = setup([aMembership(team.id, owner.id, 'owner')], team);
    await expect(service.authorize(aTokenPrincipal(owner, team.id), team.id, 'run')).resolves.toBeTruthy();
    expect(
      (await refusal(service.authorize(aTokenPrincipal(owner, team.id), team.id, 'remove_members'))).code,
    ).toBe('token_not_allowed');
    expect((await refusal(service.authorize(aTokenPrincipal(owner, 'other'), team.id, 'read'))).status).toBe(
      404,
    );
  });

  it('refuses to demote the last owner', async () => {
    const { service, repo } = setup(
      [aMembership(team.id, owner.id, 'owner'), aMembership(team.id, member.id)],
      team,
    );
    expect((await refusal(service.changeRole(aSession(owner), team.id, owner.id, 'admin'))).code).toBe(
      'last_owner',
    );
    expect(repo.setRole).not.toHaveBeenCalled();
  });

  it('lets an admin remove a member but not an owner', async () => {
    const members = [
      aMembership(team.id, owner.id, 'owner'),
      aMembership(team.id, admin.id, 'admin'),
      aMembership(team.id, member.id),
    ];
    const { service, repo } = setup(members, team);
    expect((await refusal(service.removeMember(aSession(admin), team.id, owner.id))).code).toBe(
      'cannot_remove_owner',
    );
    await service.removeMember(aSession(admin), team.id, member.id);
    expect(repo.removeMember).toHaveBeenCalledWith(team.id, member.id);
  });

  it('makes a sole owner name a new owner before leaving, then announces the departure', async () => {
    const { service, repo, bus } = setup(
      [aMembership(team.id, owner.id, 'owner'), aMembership(team.id, member.id)],
      team,
    );
    const left = vi.fn();
    bus.on('team.member_left', left);
    expect((await refusal(service.leave(aSession(owner), team.id))).code).toBe('ownership_transfer_required');
    await service.leave(aSession(owner), team.id, member.id);
    expect(repo.setRole).toHaveBeenCalledWith(team.id, member.id, 'owner');
    expect(repo.removeMember).toHaveBeenCalledWith(team.id, owner.id);
    await new Promise((r) => setTimeout(r, 0));
    expect(left).toHaveBeenCalledWith({ teamId: team.id, userId: owner.id });
  });

  it('lets the last member leave, keeping the team', async () => {
    const { service, repo } = setup([aMembership(team.id, owner.id, 'owner')], team);
    await service.leave(aSession(owner), team.id);
    expect(repo.removeMember).toHaveBeenCalledWith(team.id, owner.id);
  });

  it('refuses joining while submissions are closed, and malformed codes before any lookup', async () => {
    const { service, repo, benchmarks } = setup([], team);
    expect((await refusal(service.join(aSession(member), 'O0I1'))).code).toBe('invalid_invite_code');
    expect(repo.findByInviteCode).not.toHaveBeenCalled();
    (benchmarks.anyOpenForSubmissions as ReturnType<typeof vi.fn>).mockResolvedValue(false);
    expect((await refusal(service.join(aSession(member), team.inviteCode))).code).toBe('submissions_closed');
  });
});
