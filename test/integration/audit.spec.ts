import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestHub, TestHub } from '../support/hub';
import { ownerWithTeam, signIn, TestUser, withToken } from '../support/users';

describe('the audit log of organizer actions', () => {
  let hub: TestHub;
  let organizer: TestUser;

  beforeAll(async () => {
    hub = await startTestHub({ env: { ADMIN_LOGINS: 'au-organizer' } });
    organizer = await signIn(hub, 'au-organizer');
  });
  afterAll(async () => hub?.close());

  const entries = async (query = '') => (await organizer.get(`/api/admin/audit${query}`)).body.items;

  it('records open/close, limits, announcements and rules bumps with who, when, what and why', async () => {
    const closed = await organizer.patch('/api/admin/benchmarks/toy-decode', {
      submissionsOpen: false,
      evaluationsOpen: false,
      reason: 'maintenance window',
    });
    expect(closed.status).toBe(200);
    await organizer.patch('/api/admin/benchmarks/toy-decode', {
      runTimeLimitSeconds: 1200,
      announcement: 'Back at 18:00 UTC',
    });
    await organizer.patch('/api/admin/benchmarks/toy-decode', {
      submissionsOpen: true,
      evaluationsOpen: true,
    });
    const bumped = await organizer.post('/api/admin/benchmarks/toy-decode/rules-version', {
      reason: 'hidden workload leaked',
      confirm: true,
    });
    expect(bumped.status).toBe(200);

    const items = await entries('?benchmark=toy-decode');
    expect(items.map((e: { action: string }) => e.action)).toEqual([
      'benchmark.rules_bump',
      'benchmark.open_evaluations',
      'benchmark.open_submissions',
      'benchmark.announcement',
      'benchmark.run_time_limit',
      'benchmark.close_evaluations',
      'benchmark.close_submissions',
    ]);
    const close = items[items.length - 1];
    expect(close).toMatchObject({
      actor: { login: 'au-organizer', id: organizer.id },
      target: { kind: 'benchmark', id: 'toy-decode' },
      benchmarkId: 'toy-decode',
      reason: 'maintenance window',
      details: { from: true, to: false },
    });
    expect(Date.now() - new Date(close.at).getTime()).toBeLessThan(60_000);
    expect(items[0]).toMatchObject({ reason: 'hidden workload leaked', details: { from: 1, to: 2 } });
    expect(items.find((e: { action: string }) => e.action === 'benchmark.run_time_limit').details.to).toBe(
      1200,
    );

    // A change that changes nothing is not an action.
    const before = (await entries()).length;
    await organizer.patch('/api/admin/benchmarks/toy-decode', { submissionsOpen: true });
    expect((await entries()).length).toBe(before);
    const onlyReason = await organizer.patch('/api/admin/benchmarks/toy-decode', { reason: 'nothing' });
    expect(onlyReason.status).toBe(400);
  });

  it('records baseline re-measures and agent creation, drain and revocation', async () => {
    const removed = await organizer.delete(
      '/api/admin/benchmarks/toy-decode/baselines?reason=driver%20update',
    );
    expect(removed.status).toBe(200);
    const agent = await organizer.post('/api/admin/agents', { name: 'box-7' });
    expect(agent.status).toBe(201);
    await organizer.post(`/api/admin/agents/${agent.body.id}/drain?reason=fan%20noise`, { draining: true });
    await organizer.delete(`/api/admin/agents/${agent.body.id}?reason=decommissioned`);
    const items = await entries(`?target=${agent.body.id}`);
    expect(items.map((e: { action: string; reason: string | null }) => [e.action, e.reason])).toEqual([
      ['agent.revoke', 'decommissioned'],
      ['agent.drain', 'fan noise'],
      ['agent.create', null],
    ]);
    expect(items[0].details).toMatchObject({ name: 'box-7' });
    const remeasure = await entries('?action=baseline.remeasure');
    expect(remeasure[0]).toMatchObject({ reason: 'driver update', details: { hardware: null, deleted: 0 } });
  });

  it('pages with a cursor and refuses an unknown action filter by name', async () => {
    const first = await organizer.get('/api/admin/audit?limit=2');
    expect(first.body.items).toHaveLength(2);
    expect(first.body.nextCursor).toEqual(expect.any(String));
    const second = await organizer.get(`/api/admin/audit?limit=2&cursor=${first.body.nextCursor}`);
    expect(second.body.items[0].id).not.toBe(first.body.items[1].id);
    expect(new Date(second.body.items[0].at) <= new Date(first.body.items[1].at)).toBe(true);
    const bad = await organizer.get('/api/admin/audit?action=benchmark.explode');
    expect(bad.status).toBe(400);
    expect(bad.body.error).toMatchObject({ code: 'invalid_action' });
    expect(bad.body.error.message).toMatch(/benchmark\.rules_bump/);
  });

  it('is readable by organizers only, signed in to the web', async () => {
    const { owner } = await ownerWithTeam(hub, 'au-participant');
    const refused = await owner.get('/api/admin/audit');
    expect(refused.status).toBe(403);
    expect(refused.body.error.code).toBe('organizers_only');
    expect((await hub.http.get('/api/admin/audit')).status).toBe(401);
    // An organizer's team token is a script's credential, not the organizer's console.
    const team = (await organizer.post('/api/teams', { name: 'Org Team' })).body;
    const token = (await organizer.post(`/api/teams/${team.id}/tokens`, { name: 'ci' })).body.token;
    expect((await withToken(hub, token).get('/api/admin/audit')).status).toBe(403);
  });

  it('cannot be edited: no route changes it, and the database refuses UPDATE, DELETE and TRUNCATE', async () => {
    const [entry] = await entries();
    expect((await organizer.delete(`/api/admin/audit/${entry.id}`)).status).toBe(404);
    expect((await organizer.patch(`/api/admin/audit/${entry.id}`, { reason: 'x' })).status).toBe(404);
    await expect(
      hub.dataSource.query(`UPDATE audit_log SET reason = 'rewritten' WHERE id = $1`, [entry.id]),
    ).rejects.toThrow(/append-only/);
    await expect(hub.dataSource.query(`DELETE FROM audit_log WHERE id = $1`, [entry.id])).rejects.toThrow(
      /append-only/,
    );
    await expect(hub.dataSource.query(`TRUNCATE audit_log`)).rejects.toThrow(/append-only/);
    expect((await entries()).find((e: { id: string }) => e.id === entry.id).reason).toBe(entry.reason);
  });
});
