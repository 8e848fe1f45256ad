import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { io, Socket } from 'socket.io-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Clock } from '../../apps/api/src/common/clock';
import { toyStarter } from '../support/archives';
import { runCli } from '../support/cli';
import { ROOT, startTestHub, TestHub } from '../support/hub';
import { ownerWithTeam, signIn, TestUser, withToken } from '../support/users';

class MovableClock extends Clock {
  offsetMs = 0;
  override now(): Date {
    return new Date(Date.now() + this.offsetMs);
  }
}

const connect = (url: string, cookie: string): Socket =>
  io(`${url}/live`, {
    transports: ['websocket'],
    forceNew: true,
    extraHeaders: { cookie },
    reconnection: false,
  });

describe('bans: users or teams, per benchmark or hub-wide, with a reason and an optional end', () => {
  let hub: TestHub;
  let organizer: TestUser;
  const clock = new MovableClock();

  beforeAll(async () => {
    hub = await startTestHub({ env: { ADMIN_LOGINS: 'ban-org' }, clock });
    organizer = await signIn(hub, 'ban-org');
  });
  afterAll(async () => hub?.close());

  const upload = async (user: { upload: TestUser['upload'] }, benchmark = 'toy-decode') =>
    user.upload('/api/submissions', { benchmark }, { name: 'engine.tar.gz', content: await toyStarter() });

  it('is for organizers only, and refuses bad requests by name', async () => {
    const { owner, team } = await ownerWithTeam(hub, 'ban-p1');
    const body = { team: team.slug, reason: 'rule breaking' };
    expect((await owner.post('/api/admin/bans', body)).body.error.code).toBe('organizers_only');
    expect((await owner.get('/api/admin/bans')).status).toBe(403);
    expect((await hub.http.post('/api/admin/bans').send(body)).status).toBe(401);
    const token = (await owner.post(`/api/teams/${team.id}/tokens`, { name: 'ci' })).body.token;
    expect((await withToken(hub, token).post('/api/admin/bans', body)).status).toBe(403);

    const both = await organizer.post('/api/admin/bans', { ...body, user: 'ban-p1' });
    expect(both.status).toBe(400);
    expect(both.body.error.message).toMatch(/exactly one of "user".*or "team"/);
    expect((await organizer.post('/api/admin/bans', { reason: 'x y z' })).status).toBe(400);
    const noReason = await organizer.post('/api/admin/bans', { team: team.slug, reason: '' });
    expect(noReason.body.error.message).toMatch(/reason: say why/);
    const who = await organizer.post('/api/admin/bans', { user: 'nobody-here', reason: 'abuse' });
    expect([who.status, who.body.error.code]).toEqual([404, 'user_not_found']);
    const which = await organizer.post('/api/admin/bans', { team: 'no-such-team', reason: 'abuse' });
    expect([which.status, which.body.error.code]).toEqual([404, 'team_not_found']);
    const bench = await organizer.post('/api/admin/bans', { ...body, benchmarkId: 'nope' });
    expect([bench.status, bench.body.error.code]).toEqual([404, 'benchmark_not_found']);
    const past = await organizer.post('/api/admin/bans', { ...body, endsAt: '2020-01-01T00:00:00Z' });
    expect([past.status, past.body.error.code]).toEqual([400, 'ends_in_past']);
    const badTime = await organizer.post('/api/admin/bans', { ...body, endsAt: 'tomorrow' });
    expect(badTime.body.error.message).toMatch(/endsAt: an ISO 8601 time/);
    expect((await organizer.get('/api/admin/bans')).body).toEqual([]);
  });

  it('a banned team cannot upload or start runs through the web or its tokens; its queued runs are canceled; it still reads its results and sees why', async () => {
    const { owner, team } = await ownerWithTeam(hub, 'ban-p2', 'Leaky Metrics');
    const member = await signIn(hub, 'ban-p2-member');
    expect((await member.post('/api/teams/join', { code: team.inviteCode })).status).toBe(200);
    const token = (await owner.post(`/api/teams/${team.id}/tokens`, { name: 'cli' })).body.token;
    const cli = withToken(hub, token);
    const sub = (await upload(owner)).body.submission.id;
    const queued = (await owner.post(`/api/submissions/${sub}/runs`, { mode: 'public' })).body.run;
    expect(queued.status).toBe('queued');

    // The team's socket stays open through the ban: reading is allowed, and the cancel arrives live.
    const socket = connect(hub.baseUrl, owner.cookie);
    await new Promise<void>((resolve, reject) => {
      socket.once('connect', () => resolve());
      socket.once('connect_error', reject);
    });
    expect((await socket.emitWithAck('team.join', { teamId: team.id })).ok).toBe(true);
    const canceledLive = new Promise<{ run: { id: string; status: string; cancelReason: string } }>(
      (resolve) => socket.on('team.run', (e) => e.run.status === 'canceled' && resolve(e)),
    );

    const endsAt = new Date(Date.now() + 3 * 86400_000).toISOString();
    const ban = await organizer.post('/api/admin/bans', {
      team: team.slug,
      benchmarkId: 'toy-decode',
      reason: 'exploited the metric recorder',
      endsAt,
    });
    expect(ban.status).toBe(201);
    expect(ban.body).toMatchObject({
      subject: { kind: 'team', slug: team.slug, name: 'Leaky Metrics' },
      benchmarkId: 'toy-decode',
      reason: 'exploited the metric recorder',
      endsAt,
      createdBy: 'ban-org',
      active: true,
    });

    const live = await canceledLive;
    expect(live.run).toMatchObject({ id: queued.id, status: 'canceled' });
    expect(live.run.cancelReason).toBe('banned: exploited the metric recorder');
    expect((await socket.emitWithAck('run.join', { runId: queued.id, afterSeq: 0 })).ok).toBe(true);
    socket.close();

    for (const attempt of [
      await upload(owner),
      await upload(member),
      await upload(cli),
      await owner.post(`/api/submissions/${sub}/runs`, { mode: 'public' }),
      await cli.post(`/api/submissions/${sub}/runs`, { mode: 'official', confirm: true }),
    ]) {
      expect(attempt.status).toBe(403);
      expect(attempt.body.error.code).toBe('banned');
      expect(attempt.body.error.message).toContain('Your team is banned from Toy decode');
      expect(attempt.body.error.message).toContain(`until ${endsAt.replace('Z', '')}`);
      expect(attempt.body.error.message).toContain('Reason: exploited the metric recorder');
      expect(attempt.body.error.details).toEqual({
        subject: 'team',
        benchmarkId: 'toy-decode',
        reason: 'exploited the metric recorder',
        endsAt: new Date(endsAt).toISOString(),
      });
    }
    // The CLI with the team's token: refused with the reason and the end; reading still works.
    const home = mkdtempSync(path.join(tmpdir(), 'dryft-ban-cli-'));
    try {
      const cliEnv = { DRYFT_API_URL: hub.baseUrl, DRYFT_TOKEN: token, XDG_CONFIG_HOME: home };
      const submit = await runCli(
        ['submit', path.join(ROOT, 'starters/toy-decode/engine'), '-b', 'toy-decode'],
        cliEnv,
      );
      expect(submit.code).not.toBe(0);
      expect(submit.stderr).toContain('Your team is banned from Toy decode');
      expect(submit.stderr).toContain('Reason: exploited the metric recorder');
      const run = await runCli(['run', sub, '--mode', 'public'], cliEnv);
      expect(run.code).not.toBe(0);
      expect(run.stderr).toContain('so you cannot start runs');
      const runs = await runCli(['runs'], cliEnv);
      expect(runs.code).toBe(0);
      expect(runs.stdout).toContain(queued.id.slice(0, 8));
    } finally {
      rmSync(home, { recursive: true, force: true });
    }
    // Founding or joining another team to get around the ban is refused too.
    const evade = await member.post('/api/teams', { name: 'Fresh Start' });
    expect([evade.status, evade.body.error.code]).toEqual([403, 'banned']);

    // Reading stays open: the run, its result, the submissions; the ban with its reason and end.
    const run = await owner.get(`/api/runs/${queued.id}`);
    expect(run.body).toMatchObject({
      status: 'canceled',
      cancelReason: 'banned: exploited the metric recorder',
    });
    expect((await cli.get(`/api/runs/${queued.id}`)).status).toBe(200);
    expect((await owner.get('/api/submissions')).status).toBe(200);
    const mine = await owner.get('/api/me/bans');
    expect(mine.body).toEqual([
      {
        subject: { kind: 'team', slug: team.slug, name: 'Leaky Metrics' },
        benchmarkId: 'toy-decode',
        reason: 'exploited the metric recorder',
        endsAt: new Date(endsAt).toISOString(),
      },
    ]);
    expect((await cli.get('/api/me/bans')).body).toHaveLength(1);

    // Other benchmarks are not touched by a per-benchmark ban.
    const elsewhere = await upload(owner, 'qwen3-4b-decode');
    expect(elsewhere.status).toBe(201);

    // The ban ends by itself at its end...
    clock.offsetMs = 4 * 86400_000;
    expect((await upload(cli)).status).toBe(201);
    expect((await owner.get('/api/me/bans')).body).toEqual([]);
    expect((await organizer.get('/api/admin/bans?active=true')).body).toEqual([]);
    clock.offsetMs = 0;
    // ...or when an organizer lifts it, once.
    const lifted = await organizer.post(`/api/admin/bans/${ban.body.id}/lift`, { reason: 'appeal accepted' });
    expect(lifted.body).toMatchObject({ active: false, liftedBy: 'ban-org', liftReason: 'appeal accepted' });
    const twice = await organizer.post(`/api/admin/bans/${ban.body.id}/lift`, { reason: 'again' });
    expect([twice.status, twice.body.error.code]).toEqual([409, 'ban_already_lifted']);
    expect((await upload(owner)).status).toBe(201);

    const audit = (await organizer.get(`/api/admin/audit?target=${ban.body.id}`)).body.items;
    expect(audit.map((e: { action: string; reason: string }) => [e.action, e.reason])).toEqual([
      ['ban.lift', 'appeal accepted'],
      ['ban.create', 'exploited the metric recorder'],
    ]);
  });

  it('a hub-wide user ban follows the user into every team and keeps them from founding or joining one', async () => {
    const { owner, team } = await ownerWithTeam(hub, 'ban-p3');
    const { team: otherTeam } = await ownerWithTeam(hub, 'ban-p3-friend');
    const teammate = await signIn(hub, 'ban-p3-mate');
    await teammate.post('/api/teams/join', { code: team.inviteCode });
    const sub = (await upload(teammate)).body.submission.id;
    const mateRun = (await teammate.post(`/api/submissions/${sub}/runs`, { mode: 'public' })).body.run;
    const ownerRun = (await owner.post(`/api/submissions/${sub}/runs`, { mode: 'public' })).body.run;

    const ban = await organizer.post('/api/admin/bans', {
      user: 'ban-p3',
      reason: 'sharing hidden workloads',
    });
    expect(ban.body).toMatchObject({
      subject: { kind: 'user', login: 'ban-p3' },
      benchmarkId: null,
      endsAt: null,
    });

    const refused = await upload(owner);
    expect(refused.status).toBe(403);
    expect(refused.body.error.message).toMatch(
      /^You are banned from every benchmark on this hub until an organizer lifts the ban, so you cannot upload submissions\. Reason: sharing hidden workloads\./,
    );
    expect((await owner.post('/api/teams', { name: 'Another' })).body.error.code).toBe('banned');
    expect((await owner.post('/api/teams/join', { code: otherTeam.inviteCode })).body.error.code).toBe(
      'banned',
    );
    // Only the banned user's own unstarted runs were canceled; a teammate keeps working.
    await expect.poll(async () => (await owner.get(`/api/runs/${ownerRun.id}`)).body.status).toBe('canceled');
    expect((await teammate.get(`/api/runs/${mateRun.id}`)).body.status).toBe('queued');
    expect((await upload(teammate)).status).toBe(201);
    expect((await owner.get('/api/me/bans')).body[0]).toMatchObject({
      subject: { kind: 'user', login: 'ban-p3' },
      benchmarkId: null,
      endsAt: null,
    });
    const list = await organizer.get('/api/admin/bans?active=true');
    expect(list.body.map((b: { id: string }) => b.id)).toContain(ban.body.id);
  });
});
