import fc from 'fast-check';
import { io, Socket } from 'socket.io-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HttpUser, toyStarter } from '../support/agent-helpers';
import { appKeys, APP_ID, githubAppEnv } from '../support/github-app';
import { GithubStandin, startGithubStandin } from '../support/github-standin';
import { ownerWithTeam } from '../support/users';
import { startTestHub, TestHub } from '../support/hub';
import { TestAgent } from '../support/test-agent';

/**
 * Bad input is refused at the edge (issue 14, item 7): query strings and agent events the server can
 * never use get a 400 (REST) or a final refusal (/agents) that says what to change, never a 500 or a
 * "resend later" that makes an agent retry forever.
 */
describe('bad input: 400 at the edge, never 500', () => {
  let hub: TestHub;
  let user: HttpUser;
  let runId: string;
  let submissionId: string;

  beforeAll(async () => {
    hub = await startTestHub({ env: { ADMIN_LOGINS: 'bad-org' } });
    user = await HttpUser.signIn(hub.baseUrl, 'bad-input');
    await user.createTeam();
    submissionId = await user.upload(await toyStarter());
    runId = (await user.startRun(submissionId)).id;
    const agent = new TestAgent(hub);
    await agent.claim(runId);
    await agent.log(runId, 'one', 'two', 'three');
  });
  afterAll(async () => hub?.close());

  const refused = async (path: string, param: string) => {
    const res = await user.get(path);
    expect(res.status, `${path} → ${JSON.stringify(res.body)}`).toBe(400);
    expect(res.body.error.code).toBe('invalid_request');
    expect(res.body.error.message).toContain(param);
    return res.body.error.message as string;
  };

  it('GET /api/runs?submission= refuses what is not a run id, quotes and all', async () => {
    expect(await refused('/api/runs?submission=not-a-uuid', 'submission')).toMatch(/UUID/);
    await refused(`/api/runs?submission=${encodeURIComponent("' OR '1'='1")}`, 'submission');
    await refused(`/api/runs?submission=${submissionId}&submission=${submissionId}`, 'submission');
    expect(await refused('/api/runs?status=done', 'status')).toMatch(/queued, assigned, running/);
    expect(await refused('/api/runs?limit=0', 'limit')).toMatch(/from 1 to 100/);
    await refused('/api/runs?limit=1e2', 'limit');
    // The good ones still work; an upper-case id is the same id.
    const { status } = await user.run(runId);
    const ok = await user.get(`/api/runs?submission=${submissionId.toUpperCase()}&status=${status}&limit=5`);
    expect(ok.status).toBe(200);
    expect(ok.body.items.map((r: { id: string }) => r.id)).toEqual([runId]);
  });

  it('GET /logs?after= refuses exponents, overflow, negatives and fractions, naming the range', async () => {
    expect(await refused(`/api/runs/${runId}/logs?after=1e20`, 'after')).toMatch(/digits only/);
    expect(await refused(`/api/runs/${runId}/logs?after=9007199254740993`, 'after')).toMatch(
      /from 0 to 2147483647/,
    );
    await refused(`/api/runs/${runId}/logs?after=2147483648`, 'after');
    await refused(`/api/runs/${runId}/logs?after=-1`, 'after');
    await refused(`/api/runs/${runId}/logs?after=1.5`, 'after');
    await refused(`/api/runs/${runId}/logs?after=`, 'after');
    await refused(`/api/runs/${runId}/logs?limit=5001`, 'limit');
    const last = await user.get(`/api/runs/${runId}/logs?after=2147483647`);
    expect(last.status).toBe(200);
    expect(last.body.items).toEqual([]);
    const page = await user.get(`/api/runs/${runId}/logs?after=1&limit=1`);
    expect(page.body.items.map((l: { text: string }) => l.text)).toEqual(['two']);
  });

  it('cursors that the API never returned are refused on every paginated route', async () => {
    const forged = Buffer.from('2026-01-01T00:00:00.000Z|not-a-uuid').toString('base64url');
    for (const path of [`/api/runs?cursor=${forged}`, `/api/submissions?cursor=${forged}`]) {
      const res = await user.get(path);
      expect(res.status, path).toBe(400);
      expect(res.body.error.code).toBe('invalid_cursor');
    }
    await refused(`/api/submissions?limit=abc`, 'limit');
    await refused(`/api/runs?cursor=${'x'.repeat(600)}`, 'cursor');
  });

  it('any query string on the list and log routes answers 200 or 400, never 500 (property)', async () => {
    const values = fc.oneof(
      fc.string(),
      fc.constantFrom('1e20', '9007199254740993', '-0', '0x10', ' 1', 'NaN', 'Infinity', "' OR '1'='1"),
      fc.uuid(),
      fc.integer({ min: -10, max: 2 ** 40 }).map(String),
    );
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom('/api/runs', `/api/runs/${runId}/logs`, '/api/submissions', '/api/quota'),
        fc.dictionary(
          fc.constantFrom('submission', 'status', 'after', 'limit', 'cursor', 'benchmark'),
          values,
        ),
        async (path, query) => {
          const res = await user.get(`${path}?${new URLSearchParams(query).toString()}`);
          expect([200, 400, 404], `${path}?${JSON.stringify(query)} → ${res.status}`).toContain(res.status);
          if (res.status !== 200) expect(res.body.error.message.length).toBeGreaterThan(10);
        },
      ),
      { numRuns: 150 },
    );
  });
});

describe('NUL characters and body-parser refusals: 4xx naming what to change, never 500', () => {
  let hub: TestHub;
  let owner: HttpUser;
  let org: HttpUser;
  let teamId: string;
  let runId: string;

  beforeAll(async () => {
    hub = await startTestHub({ env: { ADMIN_LOGINS: 'nul-org' } });
    owner = await HttpUser.signIn(hub.baseUrl, 'nul-owner');
    teamId = (await owner.createTeam()).id;
    runId = (await owner.startRun(await owner.upload(await toyStarter()))).id;
    org = await HttpUser.signIn(hub.baseUrl, 'nul-org');
  });
  afterAll(async () => hub?.close());

  const inAnHour = () => new Date(Date.now() + 3_600_000).toISOString();
  // Postgres stores no NUL in text ("invalid byte sequence for encoding UTF8: 0x00"): each stored
  // text field refuses it at the edge, naming the field.
  it.each([
    ['team name', () => owner.post('/api/teams', { name: 'Nul\u0000Team' }), 'name'],
    ['token name', () => owner.post(`/api/teams/${teamId}/tokens`, { name: 'ci\u0000' }), 'name'],
    ['agent name', () => org.post('/api/admin/agents', { name: 'box\u0000' }), 'name'],
    ['cancel reason', () => owner.post(`/api/runs/${runId}/cancel`, { reason: 'stop\u0000' }), 'reason'],
    [
      'ban reason',
      () => org.post('/api/admin/bans', { user: 'nul-owner', reason: 'spam\u0000 spam' }),
      'reason',
    ],
    [
      'announcement',
      () => org.req('PATCH', '/api/admin/benchmarks/toy-decode', { announcement: 'hello\u0000' }),
      'announcement',
    ],
    [
      'round name',
      () =>
        org.req('PUT', '/api/admin/benchmarks/toy-decode/round', {
          name: 'Round\u00001',
          startsAt: new Date().toISOString(),
          endsAt: inAnHour(),
        }),
      'name',
    ],
    [
      'schedule reason',
      () =>
        org.post('/api/admin/benchmarks/toy-decode/schedule', {
          action: 'open',
          at: inAnHour(),
          reason: 'later\u0000',
        }),
      'reason',
    ],
  ])('a NUL in the %s answers 400 naming the field', async (_what, send, field) => {
    const res = await send();
    expect(res.status, JSON.stringify(res.body)).toBe(400);
    expect(res.body.error.code).toBe('invalid_request');
    expect(res.body.error.message).toContain(`${field}: `);
    expect(res.body.error.message).toMatch(/NUL character/);
  });

  it('nothing with a NUL was stored, and the same requests without it succeed', async () => {
    expect((await owner.post(`/api/teams/${teamId}/tokens`, { name: 'ci' })).status).toBe(201);
    expect((await org.post('/api/admin/agents', { name: 'nul-box' })).status).toBe(201);
    const tokens = await owner.get(`/api/teams/${teamId}/tokens`);
    expect(JSON.stringify(tokens.body)).not.toContain('\\u0000');
  });

  const raw = (headers: Record<string, string>, body: Buffer | string) =>
    fetch(`${hub.baseUrl}/api/teams`, {
      method: 'POST',
      headers: { cookie: owner.cookie, 'x-csrf-token': owner.csrf, ...headers },
      body,
    }).then(async (r) => ({
      status: r.status,
      body: (await r.json()) as { error: { code: string; message: string } },
    }));

  it('a form body nested too deep answers 400 saying so', async () => {
    const key = 'name' + '[a]'.repeat(40);
    const res = await raw({ 'content-type': 'application/x-www-form-urlencoded' }, `${key}=x`);
    expect(res.status, JSON.stringify(res.body)).toBe(400);
    expect(res.body.error.code).toBe('invalid_body');
    expect(res.body.error.message).toMatch(/nested/);
  });

  it('an unsupported charset answers 415 naming it', async () => {
    const res = await raw({ 'content-type': 'application/json; charset=ebcdic' }, '{"name":"x"}');
    expect(res.status, JSON.stringify(res.body)).toBe(415);
    expect(res.body.error.code).toBe('unsupported_charset');
    expect(res.body.error.message).toMatch(/EBCDIC/);
    expect(res.body.error.message).toMatch(/UTF-8/);
  });

  it('a body labelled gzip that is not gzip answers 400; an unknown Content-Encoding 415', async () => {
    const res = await raw(
      { 'content-type': 'application/json', 'content-encoding': 'gzip' },
      '{"name":"not gzip at all"}',
    );
    expect(res.status, JSON.stringify(res.body)).toBe(400);
    expect(res.body.error.code).toBe('invalid_body');
    expect(res.body.error.message).toMatch(/gzip/);
    const unknown = await raw({ 'content-type': 'application/json', 'content-encoding': 'lzma' }, '{}');
    expect(unknown.status, JSON.stringify(unknown.body)).toBe(415);
    expect(unknown.body.error.code).toBe('unsupported_encoding');
    expect(unknown.body.error.message).toMatch(/lzma/);
  });
});

describe('/agents: a message the server will never accept gets a final refusal', () => {
  let hub: TestHub;
  let socket: Socket;

  beforeAll(async () => {
    hub = await startTestHub({ env: { ADMIN_LOGINS: 'bad-agent-org' } });
    const org = await HttpUser.signIn(hub.baseUrl, 'bad-agent-org');
    const { token } = await org.createAgent('bad-input-box');
    socket = io(`${hub.baseUrl}/agents`, {
      auth: { token },
      transports: ['websocket'],
      forceNew: true,
      reconnection: false,
    });
    await new Promise<void>((resolve, reject) => {
      socket.once('connect', () => resolve());
      socket.once('connect_error', reject);
    });
  });
  afterAll(async () => {
    socket?.close();
    await hub?.close();
  });

  const final = { ok: false, final: true, error: { code: 'invalid_payload' } };
  const result = {
    type: 'result',
    status: 'succeeded',
    failureCode: null,
    message: 'ok',
    score: null,
    workloads: [],
    metrics: {},
  };

  it.each([
    ['run.batch', { runId: 'not-a-uuid', seq: 1, entries: [] }],
    ['run.started', { runId: 'not-a-uuid' }],
    ['run.handback', { runId: "' OR '1'='1", reason: 'shutting down' }],
    ['run.finished', { runId: 'not-a-uuid', lastSeq: 0, canceled: false, exitCode: 0, result }],
    ['run.batch', { runId: '00000000-0000-0000-0000-000000000000', seq: -1, entries: [] }],
  ])('%s with a bad payload is refused for good, saying what is wrong', async (event, payload) => {
    const ack = await socket.timeout(10_000).emitWithAck(event, payload);
    expect(ack).toMatchObject(final);
    expect(ack.error.message).toMatch(/do not resend/);
    expect(ack.error.message).toMatch(/runId|seq/);
  });

  it('agent.ready and heartbeats with a bad run id answer normally: that run is not kept', async () => {
    const capabilities = {
      accelerator: 'cpu',
      gpuModel: null,
      gpuCount: 0,
      driver: null,
      harnessVersion: 'test',
      agentVersion: 'test',
      benchmarks: [],
    };
    const ready = await socket.timeout(10_000).emitWithAck('agent.ready', {
      capabilities,
      slots: [{ index: 0, gpus: [] }],
      activeRuns: [{ runId: 'not-a-uuid', lastAckedSeq: 0 }],
    });
    expect(ready.ok).toBe(true);
    expect(ready.runs).toEqual([{ runId: 'not-a-uuid', ackedSeq: 0, keep: false, deadlineAt: null }]);
    const beat = await socket.timeout(10_000).emitWithAck('agent.heartbeat', { activeRuns: ['not-a-uuid'] });
    expect(beat).toEqual({ ok: true, stop: ['not-a-uuid'] });
  });
});

describe('GitHub ids beyond 64 bits are refused, never a database error', () => {
  let standin: GithubStandin;
  let hub: TestHub;

  beforeAll(async () => {
    standin = await startGithubStandin();
    const keys = appKeys();
    standin.app.configure({ appId: APP_ID, publicKey: keys.publicKey });
    hub = await startTestHub({ env: githubAppEnv(standin, keys.privateKeyPem) });
  });
  afterAll(async () => {
    await hub?.close();
    await standin?.close();
  });

  it('setup callback and connect answer 400 for an installation id past 9223372036854775807', async () => {
    const { owner, team } = await ownerWithTeam(hub, 'gh-bad-input');
    const setup = await owner
      .get('/api/github/setup?installation_id=99999999999999999999&setup_action=install')
      .set('Accept', 'application/json');
    expect(setup.status, JSON.stringify(setup.body)).toBe(400);
    expect(setup.body.error.code).toBe('installation_id_required');
    const connect = await owner.post(`/api/teams/${team.id}/repositories`, {
      installationId: '99999999999999999999',
      repositoryId: '9223372036854775808',
    });
    expect(connect.status, JSON.stringify(connect.body)).toBe(400);
    expect(connect.body.error.message).toMatch(/installationId: a numeric GitHub id/);
    expect(connect.body.error.message).toMatch(/repositoryId: a numeric GitHub id/);
  });
});
