import { io, Socket } from 'socket.io-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HttpUser } from '../support/agent-helpers';
import { startTestHub, TestHub } from '../support/hub';

/**
 * Every `/live` and `/agents` event is answered, also when it carries no payload (socket.io then
 * hands the ack over as the first argument), more arguments than one, or a name such as
 * `__proto__` that every object inherits.
 */
const open = (url: string, auth: Record<string, string>, cookie?: string): Promise<Socket> => {
  const socket = io(url, {
    transports: ['websocket'],
    forceNew: true,
    reconnection: false,
    auth,
    extraHeaders: cookie ? { cookie } : undefined,
  });
  return new Promise((resolve, reject) => {
    socket.once('connect', () => resolve(socket));
    socket.once('connect_error', reject);
  });
};

describe('socket events without a payload, with extra arguments, or named __proto__ are answered', () => {
  let hub: TestHub;
  let live: Socket;
  let agents: Socket;

  beforeAll(async () => {
    hub = await startTestHub({ env: { ADMIN_LOGINS: 'sock-org' } });
    const org = await HttpUser.signIn(hub.baseUrl, 'sock-org');
    live = await open(`${hub.baseUrl}/live`, {}, org.cookie);
    const { token } = await org.createAgent('payload-box');
    agents = await open(`${hub.baseUrl}/agents`, { token });
  });
  afterAll(async () => {
    live?.close();
    agents?.close();
    await hub?.close();
  });

  const ask = (s: Socket, event: string, ...args: unknown[]) => s.timeout(5_000).emitWithAck(event, ...args);

  it('agents.join without a payload, as docs/API.md shows it, joins the organizer to the agents view', async () => {
    const ack = await ask(live, 'agents.join');
    expect(ack.ok, JSON.stringify(ack)).toBe(true);
    // …and with the empty object it was always answered with.
    expect((await ask(live, 'agents.join', {})).ok).toBe(true);
  });

  it('run.leave without a payload is refused saying what is missing', async () => {
    const ack = await ask(live, 'run.leave');
    expect(ack).toMatchObject({ ok: false, error: { code: 'invalid_request' } });
    expect(ack.error.message).toMatch(/runId/);
  });

  it('an event named __proto__ (or constructor) is an unknown event, on both namespaces', async () => {
    for (const [socket, name] of [
      [live, '__proto__'],
      [live, 'constructor'],
      [agents, '__proto__'],
      [agents, 'hasOwnProperty'],
    ] as const) {
      const ack = await ask(socket, name, {});
      expect(ack, name).toMatchObject({ ok: false, error: { code: 'unknown_event' } });
    }
  });

  it('a heartbeat with extra arguments is refused for good, saying to send one payload', async () => {
    const ack = await ask(agents, 'agent.heartbeat', { activeRuns: [] }, 'extra', 42);
    expect(ack).toMatchObject({ ok: false, final: true, error: { code: 'invalid_payload' } });
    expect(ack.error.message).toMatch(/one payload/);
    // The same heartbeat, as it should be, is answered normally.
    expect(await ask(agents, 'agent.heartbeat', { activeRuns: [] })).toEqual({ ok: true, stop: [] });
    // A heartbeat without a payload is answered too: refused, naming what is missing.
    const empty = await ask(agents, 'agent.heartbeat');
    expect(empty).toMatchObject({ ok: false, final: true, error: { code: 'invalid_payload' } });
  });
});
