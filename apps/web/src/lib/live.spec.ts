import { createServer, type Server as HttpServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Server } from 'socket.io';
import { io } from 'socket.io-client';
import { afterEach, describe, expect, it } from 'vitest';
import { createLiveSocket, keepConnected, reconnectDelay } from './live';

/** A real socket.io server on loopback with a `/live` namespace that counts connections. */
async function liveServer(opts: { refuseFirst?: boolean; rateLimitFirstSeconds?: number } = {}) {
  const http: HttpServer = createServer();
  const server = new Server(http);
  let connections = 0;
  let handshakes = 0;
  const handshakeTimes: number[] = [];
  const nsp = server.of('/live');
  nsp.use((_socket, next) => {
    handshakes++;
    handshakeTimes.push(Date.now());
    if (opts.rateLimitFirstSeconds && handshakes === 1) {
      // What the hub's handshake answers past RATE_LIMIT_SOCKET.
      const refusal = new Error('Too many connection attempts to /live from this address.') as Error & {
        data?: unknown;
      };
      refusal.data = { code: 'rate_limited', details: { retryAfterSeconds: opts.rateLimitFirstSeconds } };
      return next(refusal);
    }
    if (opts.refuseFirst && handshakes === 1) return next(new Error('Authentication failed.'));
    next();
  });
  nsp.on('connection', () => connections++);
  await new Promise<void>((r) => http.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(http.address() as AddressInfo).port}/live`,
    get connections() {
      return connections;
    },
    handshakeTimes,
    kick: () => nsp.disconnectSockets(true),
    close: () =>
      new Promise<void>((r) => {
        server.close();
        http.closeAllConnections();
        http.close(() => r());
      }),
  };
}

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

const until = async (what: string, cond: () => boolean, ms = 5000) => {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
};

describe('live socket', () => {
  it('reconnects after the server closes the connection (a clean API restart), every time', async () => {
    const hub = await liveServer();
    cleanups.push(hub.close);
    const s = createLiveSocket(hub.url);
    cleanups.push(() => s.close());
    await until('first connection', () => s.connected && hub.connections === 1);
    for (let i = 2; i <= 4; i++) {
      hub.kick();
      await until(`reconnect ${i}`, () => s.connected && hub.connections === i);
    }
  });

  it('a bare socket.io client stays down after the same disconnect (the bug this guards)', async () => {
    const hub = await liveServer();
    cleanups.push(hub.close);
    const s = io(hub.url, { transports: ['websocket'], reconnectionDelayMax: 100 });
    cleanups.push(() => s.close());
    await until('connected', () => s.connected);
    hub.kick();
    await new Promise((r) => setTimeout(r, 1_000));
    expect(s.connected).toBe(false);
    expect(hub.connections).toBe(1);
  });

  it('retries a refused handshake with backoff, and leaves a disconnect the tab asked for alone', async () => {
    const hub = await liveServer({ refuseFirst: true });
    cleanups.push(hub.close);
    const s = io(hub.url, { transports: ['websocket'] });
    const stop = keepConnected(s, () => 50);
    cleanups.push(() => (stop(), s.close()));
    await until('connected after one refusal', () => s.connected && hub.connections === 1);
    s.disconnect();
    await new Promise((r) => setTimeout(r, 300));
    expect(s.connected).toBe(false);
  });

  it('a handshake refused as rate limited is tried again after its Retry-After, not the backoff', async () => {
    const hub = await liveServer({ rateLimitFirstSeconds: 1 });
    cleanups.push(hub.close);
    const s = io(hub.url, { transports: ['websocket'] });
    const stop = keepConnected(s, () => 50);
    cleanups.push(() => (stop(), s.close()));
    await until('connected after the wait', () => s.connected && hub.connections === 1, 5_000);
    expect(hub.handshakeTimes).toHaveLength(2);
    expect(hub.handshakeTimes[1] - hub.handshakeTimes[0]).toBeGreaterThanOrEqual(950);
  });

  it('backs off from about 125 ms up to 5 s with jitter', () => {
    expect(reconnectDelay(0, () => 0)).toBe(125);
    expect(reconnectDelay(0, () => 1)).toBe(250);
    expect(reconnectDelay(3, () => 1)).toBe(2000);
    expect(reconnectDelay(10, () => 1)).toBe(5000);
    expect(reconnectDelay(50, () => 0)).toBe(2500);
  });
});
