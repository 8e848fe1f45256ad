import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateToken } from '@dryft/libs/node';
import { Clock } from '../../apps/api/src/common/clock';
import { TokensService } from '../../apps/api/src/tokens/tokens.service';
import { startTestHub, TestHub } from '../support/hub';
import { ownerWithTeam, signIn, withToken } from '../support/users';

class MovableClock extends Clock {
  offsetMs = 0;
  override now(): Date {
    return new Date(Date.now() + this.offsetMs);
  }
}

describe('team API tokens', () => {
  let hub: TestHub;
  const clock = new MovableClock();
  beforeAll(async () => {
    hub = await startTestHub({ clock });
  });
  afterAll(async () => hub?.close());

  it('shows the full value once, stores only a hash, and lists without it', async () => {
    const { owner, team } = await ownerWithTeam(hub, 'tk-ann');
    const created = await owner.post(`/api/teams/${team.id}/tokens`, { name: 'laptop' });
    expect(created.status).toBe(201);
    expect(created.body.token).toMatch(/^dryft_pat_[0-9A-Za-z]{38}$/);
    expect(created.body).toMatchObject({
      name: 'laptop',
      createdBy: 'tk-ann',
      lastUsedAt: null,
      revokedAt: null,
    });
    expect(created.body.token.startsWith(created.body.prefix)).toBe(true);
    const list = await owner.get(`/api/teams/${team.id}/tokens`);
    expect(list.body).toHaveLength(1);
    expect(JSON.stringify(list.body)).not.toContain(created.body.token);
    const stored = await hub.dataSource.query('SELECT token_hash FROM api_tokens');
    expect(JSON.stringify(stored)).not.toContain(created.body.token);
  });

  it('starts every token with this hub’s tag; another hub refuses it as another hub’s', async () => {
    const { owner, team } = await ownerWithTeam(hub, 'tk-hub');
    const { token, prefix } = (await owner.post(`/api/teams/${team.id}/tokens`, { name: 'hub' })).body;
    const tag = await hub.app.get(TokensService).hubTag();
    expect(tag).toMatch(/^[0-9a-f]{4}$/);
    expect(prefix).toBe(`dryft_pat_${tag}`);
    const other = await startTestHub({ env: { PUBLIC_URL: 'https://other.example.org' } });
    try {
      expect(await other.app.get(TokensService).hubTag()).not.toBe(tag);
      const res = await withToken(other, token).get('/api/me');
      expect(res.status).toBe(401);
      expect(res.body.error.code).toBe('token_other_hub');
      expect(res.body.error.message).toContain(
        `This token belongs to another hub (it starts dryft_pat_${tag}…, tokens of this hub at https://other.example.org start`,
      );
    } finally {
      await other.close();
    }
  });

  it('acts for its team on member routes and records its last use', async () => {
    const { owner, team } = await ownerWithTeam(hub, 'tk-ben');
    const { token } = (await owner.post(`/api/teams/${team.id}/tokens`, { name: 'ci' })).body;
    const me = await withToken(hub, token).get('/api/me');
    expect(me.status).toBe(200);
    expect(me.body).toMatchObject({ via: 'token', activeTeamId: team.id, csrfToken: null });
    const teams = await withToken(hub, token).get('/api/teams');
    expect(teams.body.map((t: { id: string }) => t.id)).toEqual([team.id]);
    const list = await owner.get(`/api/teams/${team.id}/tokens`);
    expect(list.body[0].lastUsedAt).not.toBeNull();
    // Member permissions only: managing tokens stays with people signed in.
    const manage = await withToken(hub, token).post(`/api/teams/${team.id}/tokens`, { name: 'more' });
    expect(manage.status).toBe(403);
    expect(manage.body.error.code).toBe('token_not_allowed');
  });

  it('is managed by owners and admins only', async () => {
    const { owner, team } = await ownerWithTeam(hub, 'tk-cal');
    const member = await signIn(hub, 'tk-cid');
    await member.post('/api/teams/join', { code: team.inviteCode });
    const res = await member.post(`/api/teams/${team.id}/tokens`, { name: 'mine' });
    expect(res.status).toBe(403);
    expect((await member.get(`/api/teams/${team.id}/tokens`)).status).toBe(403);
    await owner.patch(`/api/teams/${team.id}/members/${member.id}`, { role: 'admin' });
    expect((await member.post(`/api/teams/${team.id}/tokens`, { name: 'mine' })).status).toBe(201);
  });

  it('refuses revoked, expired, malformed, bad-checksum and unknown tokens with 401 saying which', async () => {
    const { owner, team } = await ownerWithTeam(hub, 'tk-dee');
    const revoked = (await owner.post(`/api/teams/${team.id}/tokens`, { name: 'old' })).body;
    const revoke = await owner.delete(`/api/teams/${team.id}/tokens/${revoked.id}`);
    expect(revoke.body.revokedAt).not.toBeNull();
    expect((await owner.delete(`/api/teams/${team.id}/tokens/${revoked.id}`)).status).toBe(200);
    const soon = new Date(Date.now() + 60_000).toISOString();
    const expiring = (await owner.post(`/api/teams/${team.id}/tokens`, { name: 'short', expiresAt: soon }))
      .body;
    const flip = revoked.token.slice(0, -1) + (revoked.token.endsWith('A') ? 'B' : 'A');
    const cases: [string, string][] = [
      [revoked.token, 'token_revoked'],
      ['dryft_pat_short', 'token_malformed'],
      ['ghp_notours', 'token_malformed'],
      [flip, 'token_bad_checksum'],
      [generateToken('pat', await hub.app.get(TokensService).hubTag()), 'token_invalid'],
      [generateToken('pat', 'zZ00'), 'token_other_hub'],
    ];
    for (const [value, code] of cases) {
      const res = await withToken(hub, value).get('/api/me');
      expect(res.status, code).toBe(401);
      expect(res.body.error.code).toBe(code);
      expect(res.body.error.message.length).toBeGreaterThan(20);
    }
    expect((await withToken(hub, expiring.token).get('/api/me')).status).toBe(200);
    clock.offsetMs = 120_000;
    try {
      const expired = await withToken(hub, expiring.token).get('/api/me');
      expect(expired.status).toBe(401);
      expect(expired.body.error.code).toBe('token_expired');
    } finally {
      clock.offsetMs = 0;
    }
    const past = await owner.post(`/api/teams/${team.id}/tokens`, {
      name: 'past',
      expiresAt: '2001-01-01T00:00:00Z',
    });
    expect(past.status).toBe(400);
    const garbage = await owner.post(`/api/teams/${team.id}/tokens`, { name: 'x', expiresAt: 'tomorrow' });
    expect(garbage.status).toBe(400);
    const scheme = await hub.http.get('/api/me').set('Authorization', 'Basic abc');
    expect(scheme.status).toBe(401);
    expect(scheme.body.error.code).toBe('bad_authorization');
  });

  it('refuses malformed tokens without a database query', async () => {
    const queries: string[] = [];
    const original = hub.dataSource.driver.createQueryRunner.bind(hub.dataSource.driver);
    hub.dataSource.driver.createQueryRunner = (mode) => {
      const runner = original(mode);
      const query = runner.query.bind(runner);
      runner.query = ((sql: string, ...rest: unknown[]) => {
        queries.push(sql);
        return (query as (...a: unknown[]) => unknown)(sql, ...rest);
      }) as typeof runner.query;
      return runner;
    };
    try {
      const res = await withToken(hub, 'dryft_pat_!!!').get('/api/me');
      expect(res.status).toBe(401);
      expect(queries.filter((q) => /api_tokens/.test(q))).toEqual([]);
    } finally {
      hub.dataSource.driver.createQueryRunner = original;
    }
  });

  it('stops working when its creator leaves the team', async () => {
    const { owner, team } = await ownerWithTeam(hub, 'tk-eva');
    const admin = await signIn(hub, 'tk-eli');
    await admin.post('/api/teams/join', { code: team.inviteCode });
    await owner.patch(`/api/teams/${team.id}/members/${admin.id}`, { role: 'admin' });
    const { token } = (await admin.post(`/api/teams/${team.id}/tokens`, { name: 'eli' })).body;
    await owner.delete(`/api/teams/${team.id}/members/${admin.id}`);
    const res = await withToken(hub, token).get('/api/me');
    expect(res.status).toBe(401);
    expect(res.body.error.code).toBe('token_creator_left');
  });

  it('a token revoked because its creator left stays revoked when the creator rejoins, and the list says so', async () => {
    const { owner, team } = await ownerWithTeam(hub, 'tk-gil');
    const member = await signIn(hub, 'tk-gus');
    await member.post('/api/teams/join', { code: team.inviteCode });
    await owner.patch(`/api/teams/${team.id}/members/${member.id}`, { role: 'admin' });
    const made = (await member.post(`/api/teams/${team.id}/tokens`, { name: 'gus ci' })).body;
    expect((await withToken(hub, made.token).get('/api/me')).status).toBe(200);

    // Leaving (and, below, being removed) revokes the creator's tokens of that team at once.
    expect((await member.post(`/api/teams/${team.id}/leave`, {})).status).toBe(200);
    const listed = async () =>
      (
        (await owner.get(`/api/teams/${team.id}/tokens`)).body as { id: string; revokedAt: string | null }[]
      ).find((t) => t.id === made.id)!;
    expect((await listed()).revokedAt).not.toBeNull();
    const revokedAt = (await listed()).revokedAt;
    let res = await withToken(hub, made.token).get('/api/me');
    expect(res.status).toBe(401);
    expect(res.body.error.code).toBe('token_creator_left');

    // Rejoining (even as admin again) does not bring it back.
    expect((await member.post('/api/teams/join', { code: team.inviteCode })).status).toBe(200);
    await owner.patch(`/api/teams/${team.id}/members/${member.id}`, { role: 'admin' });
    res = await withToken(hub, made.token).get('/api/me');
    expect(res.status).toBe(401);
    expect(res.body.error.code).toBe('token_creator_left');
    expect(res.body.error.message).toMatch(/stays revoked/);
    expect((await listed()).revokedAt).toBe(revokedAt);

    // The same for a member removed by the owner, then invited back.
    const second = (await member.post(`/api/teams/${team.id}/tokens`, { name: 'gus ci 2' })).body;
    await owner.delete(`/api/teams/${team.id}/members/${member.id}`);
    await member.post('/api/teams/join', { code: team.inviteCode });
    expect((await withToken(hub, second.token).get('/api/me')).status).toBe(401);
    // A token made after rejoining works.
    await owner.patch(`/api/teams/${team.id}/members/${member.id}`, { role: 'admin' });
    const fresh = (await member.post(`/api/teams/${team.id}/tokens`, { name: 'gus ci 3' })).body;
    expect((await withToken(hub, fresh.token).get('/api/me')).status).toBe(200);
  });

  it('never crosses teams', async () => {
    const { owner: a, team: ta } = await ownerWithTeam(hub, 'tk-fox');
    const { team: tb } = await ownerWithTeam(hub, 'tk-fin');
    const { token } = (await a.post(`/api/teams/${ta.id}/tokens`, { name: 'a' })).body;
    expect((await withToken(hub, token).get(`/api/teams/${tb.id}`)).status).toBe(404);
    expect((await a.get(`/api/teams/${tb.id}/tokens`)).status).toBe(404);
    const other = (await a.post(`/api/teams/${ta.id}/tokens`, { name: 'b' })).body;
    const { owner: b } = await ownerWithTeam(hub, 'tk-fig');
    expect((await b.delete(`/api/teams/${ta.id}/tokens/${other.id}`)).status).toBe(404);
  });
});
