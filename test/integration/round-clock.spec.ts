import { io, Socket } from 'socket.io-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BenchmarkClockView } from '@dryft/libs';
import { toyStarter } from '../support/archives';
import * as path from 'node:path';
import { createHub } from '../../apps/api/src/bootstrap';
import { loadConfig } from '../../apps/api/src/config/config';
import { ROOT, startTestHub, TestHub } from '../support/hub';
import { ownerWithTeam, signIn, TestUser } from '../support/users';

describe('the round clock and scheduled opens/closes', () => {
  let hub: TestHub;
  let organizer: TestUser;
  let participant: TestUser;
  let spectator: Socket;
  const clocks: BenchmarkClockView[] = [];

  beforeAll(async () => {
    hub = await startTestHub({ env: { ADMIN_LOGINS: 'rc-org' } });
    organizer = await signIn(hub, 'rc-org');
    ({ owner: participant } = await ownerWithTeam(hub, 'rc-ann'));
    // A signed-out spectator who joined no room still hears every clock change.
    spectator = io(`${hub.baseUrl}/live`, { transports: ['websocket'], forceNew: true, reconnection: false });
    await new Promise<void>((resolve, reject) => {
      spectator.once('connect', () => resolve());
      spectator.once('connect_error', reject);
    });
    spectator.on('benchmark.clock', (e: { clock: BenchmarkClockView }) => clocks.push(e.clock));
  });
  afterAll(async () => {
    spectator?.close();
    await hub?.close();
  });

  const upload = () =>
    participant.upload(
      '/api/submissions',
      { benchmark: 'toy-decode' },
      { name: 'e.tar.gz', content: Buffer.alloc(0) },
    );

  it('shows a round with a countdown to anyone, set by organizers only, and live', async () => {
    const empty = await hub.http.get('/api/benchmarks/toy-decode/clock');
    expect(empty.body).toMatchObject({
      benchmarkId: 'toy-decode',
      round: null,
      submissionsOpen: true,
      scheduled: [],
    });
    const round = { name: 'Round 1', startsAt: '2026-11-01T00:00:00Z', endsAt: '2026-12-24T18:00:00Z' };
    expect((await participant.patch('/api/admin/benchmarks/toy-decode', {})).status).toBe(403);
    const refused = await participant.put('/api/admin/benchmarks/toy-decode/round').send(round);
    expect(refused.status).toBe(403);
    expect((await hub.http.put('/api/admin/benchmarks/toy-decode/round').send(round)).status).toBe(401);

    const backwards = await organizer
      .put('/api/admin/benchmarks/toy-decode/round')
      .send({ ...round, endsAt: '2026-10-01T00:00:00Z' });
    expect(backwards.status).toBe(400);
    expect(backwards.body.error.message).toMatch(/endsAt must be after startsAt/);
    const badTime = await organizer
      .put('/api/admin/benchmarks/toy-decode/round')
      .send({ ...round, startsAt: 'monday' });
    expect(badTime.body.error.message).toMatch(/startsAt: an ISO 8601 time/);
    expect((await organizer.put('/api/admin/benchmarks/nope/round').send(round)).body.error.code).toBe(
      'benchmark_not_found',
    );

    const set = await organizer
      .put('/api/admin/benchmarks/toy-decode/round')
      .send({ ...round, reason: 'kick-off' });
    expect(set.status).toBe(200);
    expect(set.body.round).toEqual({
      name: 'Round 1',
      startsAt: '2026-11-01T00:00:00.000Z',
      endsAt: '2026-12-24T18:00:00.000Z',
    });
    await expect.poll(() => clocks.at(-1)?.round?.name).toBe('Round 1');
    const audit = (await organizer.get('/api/admin/audit?action=round.set')).body.items[0];
    expect(audit).toMatchObject({ reason: 'kick-off', details: { from: null } });
  });

  it('never opens or closes anything by itself: an ended round leaves submissions as they are', async () => {
    const ended = { name: 'Round 0', startsAt: '2020-01-01T00:00:00Z', endsAt: '2020-02-01T00:00:00Z' };
    await organizer.put('/api/admin/benchmarks/toy-decode/round').send(ended);
    const clock = (await hub.http.get('/api/benchmarks/toy-decode/clock')).body;
    expect(clock).toMatchObject({ submissionsOpen: true, evaluationsOpen: true, round: { name: 'Round 0' } });
    const up = await participant.upload(
      '/api/submissions',
      { benchmark: 'toy-decode' },
      { name: 'engine.tar.gz', content: await toyStarter() },
    );
    expect(up.status).toBe(201);
    const cleared = await organizer.delete('/api/admin/benchmarks/toy-decode/round?reason=oops');
    expect(cleared.body.round).toBeNull();
    expect((await organizer.delete('/api/admin/benchmarks/toy-decode/round')).body.error.code).toBe(
      'round_not_set',
    );
  });

  it('runs an open/close the organizer scheduled, at its time, once, in the organizer’s name', async () => {
    const at = new Date(Date.now() + 4000).toISOString();
    const refused = await participant.post('/api/admin/benchmarks/toy-decode/schedule', {
      action: 'close',
      at,
    });
    expect(refused.status).toBe(403);
    const past = await organizer.post('/api/admin/benchmarks/toy-decode/schedule', {
      action: 'close',
      at: '2020-01-01T00:00:00Z',
    });
    expect([past.status, past.body.error.code]).toEqual([400, 'schedule_in_past']);
    const badAction = await organizer.post('/api/admin/benchmarks/toy-decode/schedule', {
      action: 'pause',
      at,
    });
    expect(badAction.body.error.message).toMatch(/action/);

    const scheduled = await organizer.post('/api/admin/benchmarks/toy-decode/schedule', {
      action: 'close',
      target: 'submissions',
      at,
      reason: 'round 1 deadline',
    });
    expect(scheduled.status).toBe(201);
    expect(scheduled.body).toMatchObject({
      action: 'close',
      target: 'submissions',
      status: 'pending',
      createdBy: 'rc-org',
    });
    const pending = (await hub.http.get('/api/benchmarks/toy-decode/clock')).body;
    expect(pending.scheduled.map((s: { id: string }) => s.id)).toEqual([scheduled.body.id]);
    expect(pending.submissionsOpen).toBe(true);
    await expect.poll(() => clocks.at(-1)?.scheduled.length).toBe(1);

    await expect
      .poll(async () => (await hub.http.get('/api/benchmarks/toy-decode/clock')).body.submissionsOpen, {
        timeout: 10_000,
      })
      .toBe(false);
    await expect.poll(() => clocks.at(-1)?.submissionsOpen).toBe(false);
    expect(clocks.at(-1)?.scheduled).toEqual([]);
    const clock = (await hub.http.get('/api/benchmarks/toy-decode/clock')).body;
    expect(clock.evaluationsOpen).toBe(true);
    expect((await upload()).body.error.code).toBe('submissions_closed');
    const list = (await organizer.get('/api/admin/schedule?benchmark=toy-decode')).body;
    expect(list[0]).toMatchObject({ id: scheduled.body.id, status: 'done', outcome: 'submissions closed' });
    const audit = (await organizer.get('/api/admin/audit?action=benchmark.close_submissions')).body.items[0];
    expect(audit).toMatchObject({
      actor: { login: 'rc-org' },
      reason: 'round 1 deadline',
      details: { scheduled: true, scheduleId: scheduled.body.id, from: true, to: false },
    });
    expect((await organizer.delete(`/api/admin/schedule/${scheduled.body.id}`)).body.error.code).toBe(
      'schedule_not_pending',
    );
  });

  it('cancels a pending action, with a reason, before its time', async () => {
    const later = await organizer.post('/api/admin/benchmarks/toy-decode/schedule', {
      action: 'open',
      at: new Date(Date.now() + 3600_000).toISOString(),
    });
    expect(later.body.target).toBe('both');
    const canceled = await organizer.delete(`/api/admin/schedule/${later.body.id}?reason=extended`);
    expect(canceled.body).toMatchObject({ status: 'canceled', outcome: 'canceled by rc-org: extended' });
    expect((await hub.http.get('/api/benchmarks/toy-decode/clock')).body.scheduled).toEqual([]);
    expect((await organizer.delete('/api/admin/schedule/00000000-0000-4000-8000-000000000000')).status).toBe(
      404,
    );
    const audit = (await organizer.get(`/api/admin/audit?target=${later.body.id}`)).body.items;
    expect(audit.map((e: { action: string }) => e.action)).toEqual(['schedule.cancel', 'schedule.create']);
  });

  it('runs a scheduled action once when two replicas share the database', async () => {
    await organizer.patch('/api/admin/benchmarks/toy-decode', {
      submissionsOpen: true,
      evaluationsOpen: true,
    });
    const at = new Date(Date.now() + 4000).toISOString();
    const scheduled = await organizer.post('/api/admin/benchmarks/toy-decode/schedule', {
      action: 'close',
      target: 'evaluations',
      at,
    });
    // A second replica of the hub on the same database arms its own timer for the same action.
    const config = loadConfig(
      {
        NODE_ENV: 'test',
        LOG_LEVEL: 'error',
        DATA_DIR: path.join(ROOT, '.data', 'test', `rc-b-${process.pid}`),
      },
      ROOT,
    );
    const replica = await createHub(config, {
      databaseUrl: (hub.dataSource.options as { url: string }).url,
      logger: ['error'],
    });
    try {
      await expect
        .poll(
          async () =>
            (await organizer.get('/api/admin/schedule?benchmark=toy-decode')).body.find(
              (x: { id: string }) => x.id === scheduled.body.id,
            )?.status,
          {
            timeout: 15_000,
          },
        )
        .toBe('done');
      // Both timers fired; the claim let exactly one apply it.
      await new Promise((r) => setTimeout(r, 500));
      const entries = (
        await organizer.get('/api/admin/audit?action=benchmark.close_evaluations')
      ).body.items.filter(
        (e: { details: { scheduleId?: string } }) => e.details.scheduleId === scheduled.body.id,
      );
      expect(entries).toHaveLength(1);
      // A second application would have rewritten the outcome to "already closed; nothing changed".
      const done = (await organizer.get('/api/admin/schedule?benchmark=toy-decode')).body.find(
        (x: { id: string }) => x.id === scheduled.body.id,
      );
      expect(done.outcome).toBe('evaluations closed');
      expect((await hub.http.get('/api/benchmarks/toy-decode/clock')).body.evaluationsOpen).toBe(false);
    } finally {
      await replica.close();
    }
  });
});
