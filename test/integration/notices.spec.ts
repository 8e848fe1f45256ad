import * as path from 'node:path';
import { io, Socket } from 'socket.io-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  BenchmarkNoticeEvent,
  FinalBoardPublishedPayload,
  RoundClosingPayload,
  type BenchmarkNotice,
} from '@dryft/libs';
import { createHub } from '../../apps/api/src/bootstrap';
import { Clock } from '../../apps/api/src/common/clock';
import { EventBus } from '../../apps/api/src/common/event-bus';
import { loadConfig } from '../../apps/api/src/config/config';
import { RoundClockService } from '../../apps/api/src/round-clock/round-clock.service';
import { toyStarter } from '../support/archives';
import { ROOT, startTestHub, TestHub } from '../support/hub';
import { ownerWithTeam, signIn, TestUser } from '../support/users';
import { signedBy, WebhookReceiver } from '../support/webhook-receiver';

class MovableClock extends Clock {
  offsetMs = 0;
  override now(): Date {
    return new Date(Date.now() + this.offsetMs);
  }
}

const MIN = 60_000;
const settle = () => new Promise((r) => setTimeout(r, 1500));

describe('notices to every team: round.closing before a scheduled close, final_board.published', () => {
  let hub: TestHub;
  let receiver: WebhookReceiver;
  let base: string;
  let organizer: TestUser;
  let spectator: Socket;
  const clock = new MovableClock();
  const notices: BenchmarkNotice[] = [];
  /** Team A submitted and subscribed to both notices; B submitted with a default hook; C never submitted. */
  let a: {
    owner: TestUser;
    team: { id: string; slug: string; name: string };
    secret: string;
    hookId: string;
  };

  beforeAll(async () => {
    receiver = new WebhookReceiver();
    base = await receiver.listen();
    hub = await startTestHub({
      clock,
      env: {
        ADMIN_LOGINS: 'nt-org',
        OUTGOING_WEBHOOK_ALLOW_PRIVATE: 'true',
        OUTGOING_WEBHOOK_RETRY_SECONDS: '1',
        ROUND_CLOSING_NOTICE_MINUTES: '60',
      },
    });
    organizer = await signIn(hub, 'nt-org');
    const submit = async (owner: TestUser) =>
      expect(
        (
          await owner.upload(
            '/api/submissions',
            { benchmark: 'toy-decode' },
            { name: 'e.tar.gz', content: await toyStarter() },
          )
        ).status,
      ).toBe(201);
    const teamA = await ownerWithTeam(hub, 'nt-a', 'Closers');
    await submit(teamA.owner);
    const hookA = await teamA.owner.post(`/api/teams/${teamA.team.id}/webhooks`, {
      url: `${base}/a`,
      events: ['round.closing', 'final_board.published'],
    });
    expect(hookA.status).toBe(201);
    a = { ...teamA, secret: hookA.body.secret, hookId: hookA.body.id };
    const teamB = await ownerWithTeam(hub, 'nt-b');
    await submit(teamB.owner);
    expect(
      (await teamB.owner.post(`/api/teams/${teamB.team.id}/webhooks`, { url: `${base}/b` })).status,
    ).toBe(201);
    const teamC = await ownerWithTeam(hub, 'nt-c');
    expect(
      (
        await teamC.owner.post(`/api/teams/${teamC.team.id}/webhooks`, {
          url: `${base}/c`,
          events: ['round.closing', 'final_board.published'],
        })
      ).status,
    ).toBe(201);

    // A signed-out spectator who joined no room hears every notice.
    spectator = io(`${hub.baseUrl}/live`, { transports: ['websocket'], forceNew: true, reconnection: false });
    await new Promise<void>((resolve, reject) => {
      spectator.once('connect', () => resolve());
      spectator.once('connect_error', reject);
    });
    spectator.on('benchmark.notice', (e: unknown) => notices.push(BenchmarkNoticeEvent.parse(e).notice));
  });
  afterAll(async () => {
    spectator?.close();
    await hub?.close();
    await receiver?.close();
  });

  const tick = () => hub.app.get(RoundClockService).tick();
  const scheduleClose = async (inMs: number, target = 'both') => {
    const res = await organizer.post('/api/admin/benchmarks/toy-decode/schedule', {
      action: 'close',
      target,
      at: new Date(clock.now().getTime() + inMs).toISOString(),
    });
    expect(res.status).toBe(201);
    return res.body as { id: string; at: string };
  };
  const pendingClose = async (id: string) =>
    (await hub.http.get('/api/benchmarks/toy-decode/clock')).body.scheduled.find(
      (s: { id: string }) => s.id === id,
    ) as { at: string; noticeSentAt: string | null } | undefined;
  const closings = (path = '/a') =>
    receiver.at(path).filter((r) => r.headers['x-dryft-event'] === 'round.closing');

  it('refuses webhook events it does not know, and keeps run.finished as the default', async () => {
    const post = (body: object) =>
      a.owner.post(`/api/teams/${a.team.id}/webhooks`, { url: `${base}/v`, ...body });
    const unknown = await post({ events: ['round.opening'] });
    expect([unknown.status, unknown.body.error.code]).toEqual([400, 'invalid_request']);
    expect(unknown.body.error.message).toMatch(
      /events.*run\.finished.*round\.closing.*final_board\.published/s,
    );
    const none = await post({ events: [] });
    expect(none.status).toBe(400);
    expect(none.body.error.message).toMatch(
      /at least one event \(or leave events out for run\.finished only\)/,
    );
    const notAList = await post({ events: 'round.closing' });
    expect(notAList.status).toBe(400);
    expect(notAList.body.error.message).toMatch(/a list of events/);
    const byDefault = await post({});
    expect(byDefault.status).toBe(201);
    expect(byDefault.body.events).toEqual(['run.finished']);
    const both = await post({ events: ['final_board.published', 'round.closing', 'round.closing'] });
    expect(both.body.events).toEqual(['final_board.published', 'round.closing']);
    await a.owner.delete(`/api/teams/${a.team.id}/webhooks/${byDefault.body.id}`);
    await a.owner.delete(`/api/teams/${a.team.id}/webhooks/${both.body.id}`);
  });

  it('tells every team of the benchmark once, ROUND_CLOSING_NOTICE_MINUTES before the close, across replicas', async () => {
    const close = await scheduleClose(120 * MIN);
    await tick();
    await settle();
    expect(closings()).toHaveLength(0);
    expect((await pendingClose(close.id))?.noticeSentAt).toBeNull();

    clock.offsetMs += 61 * MIN;
    await tick();
    await expect.poll(() => closings().length, { timeout: 20_000 }).toBe(1);
    const [req] = closings();
    expect(signedBy(a.secret, req.body, req.headers['x-hub-signature-256'])).toBe(true);
    const payload = RoundClosingPayload.parse(JSON.parse(req.body));
    expect(payload).toMatchObject({
      event: 'round.closing',
      team: { id: a.team.id, name: 'Closers' },
      benchmark: { id: 'toy-decode' },
      scheduleId: close.id,
      target: 'both',
      closesAt: close.at,
      minutesLeft: 59,
    });
    expect(req.headers['x-dryft-delivery']).toBe(payload.deliveryId);
    await expect.poll(() => notices.length).toBe(1);
    expect(notices[0]).toMatchObject({
      kind: 'round.closing',
      benchmarkId: 'toy-decode',
      scheduleId: close.id,
      closesAt: close.at,
      minutesLeft: 59,
    });
    expect((await pendingClose(close.id))?.noticeSentAt).toEqual(expect.any(String));
    const [delivery] = (await a.owner.get(`/api/teams/${a.team.id}/webhooks/${a.hookId}/deliveries`)).body;
    await expect
      .poll(
        async () => (await a.owner.get(`/api/teams/${a.team.id}/webhooks/${a.hookId}/deliveries`)).body[0],
      )
      .toMatchObject({ id: delivery.id, event: 'round.closing', runId: null, status: 'succeeded' });

    // A second replica (or this one after a restart) on the same database, at the same time: the
    // notice was claimed once, so nobody sends it again.
    const replica = await createHub(
      loadConfig(
        {
          NODE_ENV: 'test',
          LOG_LEVEL: 'error',
          ROUND_CLOSING_NOTICE_MINUTES: '60',
          OUTGOING_WEBHOOK_ALLOW_PRIVATE: 'true',
          DATA_DIR: path.join(ROOT, '.data', 'test', `nt-b-${process.pid}`),
        },
        ROOT,
      ),
      { databaseUrl: (hub.dataSource.options as { url: string }).url, clock, logger: ['error'] },
    );
    try {
      await replica.app.get(RoundClockService).tick();
      await tick();
      await settle();
    } finally {
      await replica.close();
    }
    expect(closings()).toHaveLength(1);
    expect(notices).toHaveLength(1);
    // Team B's hook is run.finished only; team C never submitted to this benchmark.
    expect(receiver.at('/b')).toEqual([]);
    expect(receiver.at('/c')).toEqual([]);
    await organizer.delete(`/api/admin/schedule/${close.id}`);
  });

  it('announces a close scheduled sooner than the notice window at once', async () => {
    const before = closings().length;
    const close = await scheduleClose(10 * MIN, 'evaluations');
    // No tick here: scheduling arms the timer, and the notice is due now.
    await expect.poll(() => closings().length, { timeout: 20_000 }).toBe(before + 1);
    expect(JSON.parse(closings().at(-1)!.body)).toMatchObject({
      scheduleId: close.id,
      target: 'evaluations',
      minutesLeft: 10,
    });
    await expect.poll(() => notices.at(-1)).toMatchObject({ scheduleId: close.id, minutesLeft: 10 });
    await organizer.delete(`/api/admin/schedule/${close.id}`);
  });

  it('moves the notice with a moved close, and announces the new time again', async () => {
    const close = await scheduleClose(180 * MIN);
    await tick();
    const before = closings().length;
    const participant = await signIn(hub, 'nt-b');
    const soon = new Date(clock.now().getTime() + 30 * MIN).toISOString();
    expect((await participant.patch(`/api/admin/schedule/${close.id}`, { at: soon })).status).toBe(403);
    const past = await organizer.patch(`/api/admin/schedule/${close.id}`, { at: '2020-01-01T00:00:00Z' });
    expect([past.status, past.body.error.code]).toEqual([400, 'schedule_in_past']);
    const badAt = await organizer.patch(`/api/admin/schedule/${close.id}`, { at: 'soon' });
    expect(badAt.body.error.message).toMatch(/at: an ISO 8601 time/);
    const missing = await organizer.patch('/api/admin/schedule/00000000-0000-4000-8000-000000000000', {
      at: soon,
    });
    expect([missing.status, missing.body.error.code]).toEqual([404, 'schedule_not_found']);
    expect(closings()).toHaveLength(before);

    const moved = await organizer.patch(`/api/admin/schedule/${close.id}`, { at: soon, reason: 'cut short' });
    expect(moved.status).toBe(200);
    expect(moved.body).toMatchObject({ id: close.id, at: soon, status: 'pending' });
    await expect.poll(() => closings().length, { timeout: 20_000 }).toBe(before + 1);
    expect(JSON.parse(closings().at(-1)!.body)).toMatchObject({
      scheduleId: close.id,
      closesAt: soon,
      minutesLeft: 30,
    });

    // Moved later, past the window: the teams hear it again when the new time is near.
    const later = new Date(clock.now().getTime() + 5 * 60 * MIN).toISOString();
    await organizer.patch(`/api/admin/schedule/${close.id}`, { at: later });
    expect((await pendingClose(close.id))?.noticeSentAt).toBeNull();
    await tick();
    await settle();
    expect(closings()).toHaveLength(before + 1);
    clock.offsetMs += (4 * 60 + 10) * MIN;
    await tick();
    await expect.poll(() => closings().length, { timeout: 20_000 }).toBe(before + 2);
    expect(JSON.parse(closings().at(-1)!.body)).toMatchObject({ closesAt: later, minutesLeft: 50 });
    const audit = (await organizer.get(`/api/admin/audit?target=${close.id}`)).body.items;
    expect(audit.map((e: { action: string }) => e.action)).toEqual([
      'schedule.move',
      'schedule.move',
      'schedule.create',
    ]);
    expect(audit[1]).toMatchObject({ reason: 'cut short', details: { to: soon } });
    await organizer.delete(`/api/admin/schedule/${close.id}`);
    expect((await organizer.patch(`/api/admin/schedule/${close.id}`, { at: later })).body.error.code).toBe(
      'schedule_not_pending',
    );
  });

  it('never announces a canceled close', async () => {
    const close = await scheduleClose(120 * MIN);
    const before = closings().length;
    const seen = notices.length;
    await organizer.delete(`/api/admin/schedule/${close.id}?reason=extended`);
    clock.offsetMs += 90 * MIN;
    await tick();
    await settle();
    expect(closings()).toHaveLength(before);
    expect(notices).toHaveLength(seen);
  });

  it('tells every team of the benchmark when the final board is published', async () => {
    const publishedAt = clock.now().getTime();
    hub.app.get(EventBus).emit('leaderboard.final_published', { benchmarkId: 'toy-decode', publishedAt });
    const published = () =>
      receiver.at('/a').filter((r) => r.headers['x-dryft-event'] === 'final_board.published');
    await expect.poll(() => published().length, { timeout: 20_000 }).toBe(1);
    const req = published()[0];
    expect(signedBy(a.secret, req.body, req.headers['x-hub-signature-256'])).toBe(true);
    expect(FinalBoardPublishedPayload.parse(JSON.parse(req.body))).toMatchObject({
      event: 'final_board.published',
      team: { id: a.team.id },
      benchmark: { id: 'toy-decode' },
      publishedAt: new Date(publishedAt).toISOString(),
      url: expect.stringMatching(/\/leaderboard\/toy-decode\?board=final$/),
    });
    await expect.poll(() => notices.at(-1)?.kind).toBe('final_board.published');
    expect(notices.at(-1)).toMatchObject({
      benchmarkId: 'toy-decode',
      url: expect.stringContaining('board=final'),
    });
    await settle();
    expect(receiver.at('/b')).toEqual([]);
    expect(receiver.at('/c')).toEqual([]);
  });
});
