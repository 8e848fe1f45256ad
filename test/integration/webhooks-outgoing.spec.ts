import { createHmac, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RunFinishedPayload } from '@dryft/libs';
import { toyStarter } from '../support/archives';
import { startTestHub, TestHub } from '../support/hub';
import { TestAgent } from '../support/test-agent';
import { ownerWithTeam, signIn, TestUser, withToken } from '../support/users';

/** A small real HTTP receiver: records every request and answers with the scripted statuses. */
class Receiver {
  readonly requests: { path: string; headers: IncomingHttpHeaders; body: string; at: number }[] = [];
  private readonly server: Server;
  /** Status per path, in order; the last one repeats. */
  script: Record<string, number[]> = {};

  constructor() {
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const path = req.url ?? '/';
        this.requests.push({
          path,
          headers: req.headers,
          body: Buffer.concat(chunks).toString('utf8'),
          at: Date.now(),
        });
        const statuses = this.script[path] ?? [204];
        const status = statuses.length > 1 ? statuses.shift()! : statuses[0];
        res.writeHead(status).end();
      });
    });
  }
  async listen(): Promise<string> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }
  close(): Promise<void> {
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
  at(path: string) {
    return this.requests.filter((r) => r.path === path);
  }
}

const verify = (secret: string, body: string, header: string | undefined): boolean => {
  const expected = Buffer.from(`sha256=${createHmac('sha256', secret).update(body).digest('hex')}`);
  const got = Buffer.from(header ?? '');
  return got.length === expected.length && timingSafeEqual(got, expected);
};

describe('outgoing team webhooks: run.finished, signed like GitHub, retried with backoff', () => {
  let hub: TestHub;
  let agent: TestAgent;
  let receiver: Receiver;
  let base: string;
  let owner: TestUser;
  let team: { id: string; inviteCode: string };

  beforeAll(async () => {
    receiver = new Receiver();
    base = await receiver.listen();
    hub = await startTestHub({
      // The receiver listens on loopback: allowed here; the refusal is tested below with the default.
      env: {
        OUTGOING_WEBHOOK_RETRY_SECONDS: '1',
        OUTGOING_WEBHOOK_ATTEMPTS: '3',
        OUTGOING_WEBHOOK_ALLOW_PRIVATE: 'true',
      },
    });
    agent = new TestAgent(hub);
    ({ owner, team } = await ownerWithTeam(hub, 'wh-owner', 'Hooked'));
  });
  afterAll(async () => {
    await hub?.close();
    await receiver?.close();
  });

  const startRun = async () => {
    const up = await owner.upload(
      '/api/submissions',
      { benchmark: 'toy-decode' },
      { name: 'e.tar.gz', content: await toyStarter() },
    );
    return (await owner.post(`/api/submissions/${up.body.submission.id}/runs`, { mode: 'public' })).body.run
      .id as string;
  };

  it('lets only the team owner register, list and delete webhooks; refuses bad URLs', async () => {
    const member = await signIn(hub, 'wh-member');
    await member.post('/api/teams/join', { code: team.inviteCode });
    const asMember = await member.post(`/api/teams/${team.id}/webhooks`, { url: `${base}/m` });
    expect([asMember.status, asMember.body.error.code]).toEqual([403, 'role_not_allowed']);
    expect(asMember.body.error.message).toMatch(/Only team owners can manage outgoing webhooks/);
    const token = (await owner.post(`/api/teams/${team.id}/tokens`, { name: 'ci' })).body.token;
    expect(
      (await withToken(hub, token).post(`/api/teams/${team.id}/webhooks`, { url: `${base}/t` })).body.error
        .code,
    ).toBe('token_not_allowed');
    const { owner: stranger } = await ownerWithTeam(hub, 'wh-stranger');
    expect((await stranger.get(`/api/teams/${team.id}/webhooks`)).status).toBe(404);
    for (const url of ['ftp://example.com/x', 'not a url', '']) {
      const bad = await owner.post(`/api/teams/${team.id}/webhooks`, { url });
      expect(bad.status, url).toBe(400);
      expect(bad.body.error.message).toMatch(/url/);
    }
    const badEvent = await owner.post(`/api/teams/${team.id}/webhooks`, {
      url: `${base}/x`,
      events: ['run.started'],
    });
    expect(badEvent.status).toBe(400);
  });

  it('posts run.finished with an X-Hub-Signature-256 the receiver can verify, and lists the delivery', async () => {
    const created = await owner.post(`/api/teams/${team.id}/webhooks`, { url: `${base}/ok` });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({
      url: `${base}/ok`,
      events: ['run.finished'],
      createdBy: 'wh-owner',
    });
    expect(created.body.secret).toMatch(/^whsec_/);
    const listed = await owner.get(`/api/teams/${team.id}/webhooks`);
    expect(listed.body).toEqual([expect.not.objectContaining({ secret: expect.anything() })]);

    const runId = await startRun();
    await agent.complete(runId, 111);
    await expect.poll(() => receiver.at('/ok').length, { timeout: 20_000 }).toBe(1);
    const [req] = receiver.at('/ok');
    expect(req.headers['x-dryft-event']).toBe('run.finished');
    expect(req.headers['content-type']).toBe('application/json');
    expect(verify(created.body.secret, req.body, req.headers['x-hub-signature-256'] as string)).toBe(true);
    expect(verify('whsec_wrong', req.body, req.headers['x-hub-signature-256'] as string)).toBe(false);
    const payload = RunFinishedPayload.parse(JSON.parse(req.body));
    expect(payload).toMatchObject({
      event: 'run.finished',
      team: { id: team.id, name: 'Hooked' },
      run: { id: runId, status: 'succeeded', score: 111 },
    });
    expect(req.headers['x-dryft-delivery']).toBe(payload.deliveryId);

    await expect
      .poll(
        async () =>
          (await owner.get(`/api/teams/${team.id}/webhooks/${created.body.id}/deliveries`)).body[0]?.status,
      )
      .toBe('succeeded');
    const [delivery] = (await owner.get(`/api/teams/${team.id}/webhooks/${created.body.id}/deliveries`)).body;
    expect(delivery).toMatchObject({
      id: payload.deliveryId,
      runId,
      attempts: 1,
      lastStatusCode: 204,
      lastError: null,
    });

    // A canceled run is a finished run too.
    const canceled = await startRun();
    await owner.post(`/api/runs/${canceled}/cancel`, { reason: 'wrong file' });
    await expect.poll(() => receiver.at('/ok').length, { timeout: 20_000 }).toBe(2);
    expect(JSON.parse(receiver.at('/ok')[1].body).run).toMatchObject({ id: canceled, status: 'canceled' });
    await owner.delete(`/api/teams/${team.id}/webhooks/${created.body.id}`);
  });

  it('retries a failing receiver with backoff until it answers, and gives up after the last attempt', async () => {
    receiver.script['/flaky'] = [500, 503, 200];
    receiver.script['/down'] = [500];
    const flaky = (await owner.post(`/api/teams/${team.id}/webhooks`, { url: `${base}/flaky` })).body;
    const down = (await owner.post(`/api/teams/${team.id}/webhooks`, { url: `${base}/down` })).body;
    const runId = await startRun();
    await agent.complete(runId, 99);

    const deliveries = (id: string) => owner.get(`/api/teams/${team.id}/webhooks/${id}/deliveries`);
    await expect
      .poll(async () => (await deliveries(flaky.id)).body[0]?.status, { timeout: 40_000, interval: 500 })
      .toBe('succeeded');
    expect((await deliveries(flaky.id)).body[0]).toMatchObject({ attempts: 3, lastStatusCode: 200 });
    const times = receiver.at('/flaky');
    expect(times).toHaveLength(3);
    // Exponential backoff from a 1 s base: the first retry after 1–2 s, the second after 2–4 s.
    expect(times[1].at - times[0].at).toBeGreaterThanOrEqual(900);
    expect(times[2].at - times[1].at).toBeGreaterThanOrEqual(1900);
    // Every retry carries the same delivery id and the same signed bytes.
    expect(new Set(times.map((r) => r.headers['x-dryft-delivery'])).size).toBe(1);
    expect(new Set(times.map((r) => r.body)).size).toBe(1);

    await expect
      .poll(async () => (await deliveries(down.id)).body[0]?.status, { timeout: 40_000, interval: 500 })
      .toBe('failed');
    expect((await deliveries(down.id)).body[0]).toMatchObject({ attempts: 3, lastStatusCode: 500 });
    expect((await deliveries(down.id)).body[0].lastError).toBe(
      'the receiver answered 500; gave up after 3 attempts',
    );
    expect(receiver.at('/down')).toHaveLength(3);

    // A deleted webhook receives nothing more.
    await owner.delete(`/api/teams/${team.id}/webhooks/${flaky.id}`);
    await owner.delete(`/api/teams/${team.id}/webhooks/${down.id}`);
    expect((await owner.get(`/api/teams/${team.id}/webhooks`)).body).toEqual([]);
    expect((await owner.delete(`/api/teams/${team.id}/webhooks/${flaky.id}`)).body.error.code).toBe(
      'webhook_not_found',
    );
    const before = receiver.requests.length;
    await agent.complete(await startRun(), 98);
    await new Promise((r) => setTimeout(r, 1500));
    expect(receiver.requests.length).toBe(before);
  });
});

describe("outgoing webhooks never aim at the hub's own network (default settings)", () => {
  let hub: TestHub;
  let owner: TestUser;
  let team: { id: string; inviteCode: string };
  beforeAll(async () => {
    hub = await startTestHub();
    ({ owner, team } = await ownerWithTeam(hub, 'wh-private-owner', 'Hooked privately'));
  });
  afterAll(async () => hub?.close());

  it('refuses loopback, private, link-local and metadata addresses with what to use instead', async () => {
    for (const url of [
      'http://127.0.0.1:5432/x',
      'http://localhost:3000/api',
      'http://10.1.2.3/hook',
      'http://192.168.0.10/hook',
      'http://169.254.169.254/latest/meta-data',
      'http://[::1]:8080/hook',
      'http://[fd00::1]/hook',
    ]) {
      const res = await owner.post(`/api/teams/${team.id}/webhooks`, { url });
      expect(res.status, url).toBe(400);
      expect(res.body.error.code, url).toBe('webhook_url_refused');
      expect(res.body.error.message, url).toMatch(/private or local address .*public address/);
    }
    expect((await owner.get(`/api/teams/${team.id}/webhooks`)).body).toEqual([]);
  });

  it('judges IPv6 targets on the parsed address: mapped, NAT64 and 6to4 forms of inside addresses are refused, and a delivery to one is never attempted', async () => {
    const receiver = new Receiver();
    const base = await receiver.listen();
    const port = new URL(base).port;
    try {
      for (const host of [
        '[::ffff:127.0.0.1]',
        '[::ffff:7f00:1]',
        '[0:0:0:0:0:ffff:127.0.0.1]',
        '[::ffff:10.0.0.1]',
        '[::ffff:169.254.169.254]',
        '[fe80::1]',
        '[64:ff9b::7f00:1]',
        '[2002:7f00:1::1]',
      ]) {
        const url = `http://${host}:${port}/mapped`;
        const res = await owner.post(`/api/teams/${team.id}/webhooks`, { url });
        expect(res.status, url).toBe(400);
        expect(res.body.error.code, url).toBe('webhook_url_refused');
      }
      expect((await owner.get(`/api/teams/${team.id}/webhooks`)).body).toEqual([]);

      // A webhook stored before these checks (or while private targets were allowed): its deliveries
      // are checked again before each connection, and never sent.
      const me = (await owner.get('/api/me')).body as { user: { id: string } };
      const [{ id: hookId }] = (await hub.dataSource.query(
        `INSERT INTO team_webhooks (team_id, url, secret, events, created_by)
         VALUES ($1, $2, 'secret', '{run.finished}', $3) RETURNING id`,
        [team.id, `http://[::ffff:7f00:1]:${port}/stored`, me.user.id],
      )) as { id: string }[];
      const agent = new TestAgent(hub);
      const up = await owner.upload(
        '/api/submissions',
        { benchmark: 'toy-decode' },
        { name: 'e.tar.gz', content: await toyStarter() },
      );
      const runId = (await owner.post(`/api/submissions/${up.body.submission.id}/runs`, { mode: 'public' }))
        .body.run.id as string;
      await agent.complete(runId, 97);
      const deliveries = () => owner.get(`/api/teams/${team.id}/webhooks/${hookId}/deliveries`);
      await expect
        .poll(async () => (await deliveries()).body[0]?.status, { timeout: 30_000, interval: 300 })
        .toBe('failed');
      expect((await deliveries()).body[0].lastError).toMatch(/^not sent: .*private or local address/);
      expect(receiver.requests).toEqual([]);
    } finally {
      await receiver.close();
    }
  });
});
