import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestHub, TestHub } from '../support/hub';
import { ownerWithTeam, signIn, withToken } from '../support/users';

describe('teams, exactly as the decode product page describes them', () => {
  let hub: TestHub;
  beforeAll(async () => {
    hub = await startTestHub({ env: { ADMIN_LOGINS: 'team-organizer' } });
  });
  afterAll(async () => hub?.close());

  it('makes the creator owner with a six-character invite code without look-alikes', async () => {
    const { owner, team } = await ownerWithTeam(hub, 'tm-ann', 'Fast Qwen');
    expect(team.inviteCode).toMatch(/^[ABCDEFGHJKMNPQRSTUVWXYZ23456789]{6}$/);
    expect(team.slug).toBe('fast-qwen');
    const detail = await owner.get(`/api/teams/${team.id}`);
    expect(detail.body).toMatchObject({
      role: 'owner',
      members: [expect.objectContaining({ login: 'tm-ann', role: 'owner' })],
    });
    const second = await ownerWithTeam(hub, 'tm-ann2', 'Fast Qwen');
    expect(second.team.slug).toBe('fast-qwen-2');
  });

  it('validates the team name', async () => {
    const u = await signIn(hub, 'tm-short');
    const res = await u.post('/api/teams', { name: 'x' });
    expect(res.status).toBe(400);
    expect(res.body.error.message).toMatch(/name: at least 2 characters/);
  });

  it('joins at once with a code, tolerating case and spaces, and says so for wrong codes and second joins', async () => {
    const { team } = await ownerWithTeam(hub, 'tm-bea');
    const ben = await signIn(hub, 'tm-ben');
    const typed = ` ${team.inviteCode.slice(0, 3).toLowerCase()} ${team.inviteCode.slice(3)} `;
    const joined = await ben.post('/api/teams/join', { code: typed });
    expect(joined.status).toBe(200);
    expect(joined.body).toMatchObject({ id: team.id, role: 'member', inviteCode: null });
    const twice = await ben.post('/api/teams/join', { code: team.inviteCode });
    expect(twice.status).toBe(409);
    expect(twice.body.error.code).toBe('already_member');
    const wrong = await ben.post('/api/teams/join', { code: 'ZZZZZZ' });
    expect(wrong.status).toBe(404);
    expect(wrong.body.error.code).toBe('invite_code_not_found');
    const malformed = await ben.post('/api/teams/join', { code: 'O0I1' });
    expect(malformed.status).toBe(400);
    expect(malformed.body.error.code).toBe('invalid_invite_code');
  });

  it('regenerates the code (owners and admins only); the old one stops working', async () => {
    const { owner, team } = await ownerWithTeam(hub, 'tm-cat');
    const member = await signIn(hub, 'tm-cid');
    await member.post('/api/teams/join', { code: team.inviteCode });
    const refused = await member.post(`/api/teams/${team.id}/invite-code`);
    expect(refused.status).toBe(403);
    expect(refused.body.error.code).toBe('role_not_allowed');
    const fresh = await owner.post(`/api/teams/${team.id}/invite-code`);
    expect(fresh.body.inviteCode).not.toBe(team.inviteCode);
    const late = await signIn(hub, 'tm-cora');
    expect((await late.post('/api/teams/join', { code: team.inviteCode })).status).toBe(404);
    expect((await late.post('/api/teams/join', { code: fresh.body.inviteCode })).status).toBe(200);
  });

  it('lets only owners change roles, and never removes the last owner', async () => {
    const { owner, team } = await ownerWithTeam(hub, 'tm-dan');
    const admin = await signIn(hub, 'tm-dia');
    const member = await signIn(hub, 'tm-dov');
    await admin.post('/api/teams/join', { code: team.inviteCode });
    await member.post('/api/teams/join', { code: team.inviteCode });
    expect((await owner.patch(`/api/teams/${team.id}/members/${admin.id}`, { role: 'admin' })).status).toBe(
      200,
    );
    const byMember = await member.patch(`/api/teams/${team.id}/members/${member.id}`, { role: 'owner' });
    expect(byMember.status).toBe(403);
    expect(byMember.body.error.message).toMatch(/Only team owners/);
    const byAdmin = await admin.patch(`/api/teams/${team.id}/members/${member.id}`, { role: 'admin' });
    expect(byAdmin.status).toBe(403);
    const demoteLast = await owner.patch(`/api/teams/${team.id}/members/${owner.id}`, { role: 'member' });
    expect(demoteLast.status).toBe(409);
    expect(demoteLast.body.error.code).toBe('last_owner');
    const badRole = await owner.patch(`/api/teams/${team.id}/members/${member.id}`, { role: 'king' });
    expect(badRole.status).toBe(400);
  });

  it('lets owners and admins remove members, but an admin never removes an owner', async () => {
    const { owner, team } = await ownerWithTeam(hub, 'tm-eli');
    const admin = await signIn(hub, 'tm-ema');
    const member = await signIn(hub, 'tm-eon');
    for (const u of [admin, member]) await u.post('/api/teams/join', { code: team.inviteCode });
    await owner.patch(`/api/teams/${team.id}/members/${admin.id}`, { role: 'admin' });
    const adminRemovesOwner = await admin.delete(`/api/teams/${team.id}/members/${owner.id}`);
    expect(adminRemovesOwner.status).toBe(403);
    expect(adminRemovesOwner.body.error.code).toBe('cannot_remove_owner');
    const memberRemoves = await member.delete(`/api/teams/${team.id}/members/${admin.id}`);
    expect(memberRemoves.status).toBe(403);
    const removed = await admin.delete(`/api/teams/${team.id}/members/${member.id}`);
    expect(removed.status).toBe(200);
    expect(removed.body.members.map((m: { login: string }) => m.login)).not.toContain('tm-eon');
    expect((await member.get(`/api/teams/${team.id}`)).status).toBe(404);
    const self = await owner.delete(`/api/teams/${team.id}/members/${owner.id}`);
    expect(self.status).toBe(400);
    expect(self.body.error.code).toBe('use_leave');
  });

  it('makes a sole owner hand over ownership before leaving; a team left empty keeps existing', async () => {
    const { owner, team } = await ownerWithTeam(hub, 'tm-fay');
    const member = await signIn(hub, 'tm-fin');
    await member.post('/api/teams/join', { code: team.inviteCode });
    const refused = await owner.post(`/api/teams/${team.id}/leave`, {});
    expect(refused.status).toBe(409);
    expect(refused.body.error.code).toBe('ownership_transfer_required');
    const stranger = await signIn(hub, 'tm-fox');
    const notMember = await owner.post(`/api/teams/${team.id}/leave`, { newOwnerUserId: stranger.id });
    expect(notMember.status).toBe(400);
    expect((await owner.post(`/api/teams/${team.id}/leave`, { newOwnerUserId: member.id })).status).toBe(200);
    const after = await member.get(`/api/teams/${team.id}`);
    expect(after.body).toMatchObject({
      role: 'owner',
      members: [expect.objectContaining({ login: 'tm-fin', role: 'owner' })],
    });
    expect((await member.post(`/api/teams/${team.id}/leave`, {})).status).toBe(200);
    const { rows } = {
      rows: await hub.dataSource.query('SELECT count(*)::int AS n FROM teams WHERE id = $1', [team.id]),
    };
    expect(rows[0].n).toBe(1);
  });

  it('supports several teams with an active-team switch', async () => {
    const { owner, team: first } = await ownerWithTeam(hub, 'tm-gus', 'Gus One');
    const second = (await owner.post('/api/teams', { name: 'Gus Two' })).body;
    const me = await owner.get('/api/me');
    expect(me.body.teams.map((t: { name: string }) => t.name).sort()).toEqual(['Gus One', 'Gus Two']);
    const switched = await owner.post('/api/me/active-team', { teamId: second.id });
    expect(switched.body.activeTeamId).toBe(second.id);
    expect((await owner.get('/api/me')).body.activeTeamId).toBe(second.id);
    const { team: foreign } = await ownerWithTeam(hub, 'tm-hal');
    const refused = await owner.post('/api/me/active-team', { teamId: foreign.id });
    expect(refused.status).toBe(404);
    expect(first.id).toBeTruthy();
  });

  it('hides other teams: 404, not 403', async () => {
    const { team } = await ownerWithTeam(hub, 'tm-ida');
    const outsider = await signIn(hub, 'tm-ivo');
    const res = await outsider.get(`/api/teams/${team.id}`);
    expect(res.status).toBe(404);
    expect(res.body.error.code).toBe('team_not_found');
  });

  it('refuses creating and joining teams while the organizer has submissions closed', async () => {
    const organizer = await signIn(hub, 'team-organizer');
    const { team } = await ownerWithTeam(hub, 'tm-jan');
    // Every benchmark the hub serves: teams are refused only while none takes submissions.
    const all = (await organizer.get('/api/benchmarks')).body as { id: string }[];
    const ids = all.map((b) => b.id);
    expect(ids).toContain('toy-decode');
    for (const id of ids) {
      expect((await organizer.patch(`/api/admin/benchmarks/${id}`, { submissionsOpen: false })).status).toBe(
        200,
      );
    }
    try {
      const u = await signIn(hub, 'tm-jo');
      const create = await u.post('/api/teams', { name: 'Too Late' });
      expect(create.status).toBe(403);
      expect(create.body.error.code).toBe('submissions_closed');
      const join = await u.post('/api/teams/join', { code: team.inviteCode });
      expect(join.status).toBe(403);
    } finally {
      for (const id of ids) await organizer.patch(`/api/admin/benchmarks/${id}`, { submissionsOpen: true });
    }
  });

  it('does not let an API token create, join or leave teams', async () => {
    const { owner, team } = await ownerWithTeam(hub, 'tm-kai');
    const token = (await owner.post(`/api/teams/${team.id}/tokens`, { name: 'ci' })).body.token;
    const api = withToken(hub, token);
    const res = await api.post('/api/teams', { name: 'From a script' });
    expect(res.status).toBe(403);
    expect(res.body.error.code).toBe('token_not_allowed');
  });
});
