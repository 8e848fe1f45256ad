import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Server } from 'socket.io';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeAgent, floodJson } from '../support/fake-agent';

const RUN = '0b7c1d3e-1111-4222-8333-444455556666';

describe("the fake agent's flood batches (the bench's load generator)", () => {
  const received: unknown[] = [];
  let io: Server;
  let url: string;

  beforeAll(async () => {
    const http = createServer();
    io = new Server(http, { transports: ['websocket'], maxHttpBufferSize: 1e8 });
    io.of('/agents').on('connection', (socket) => {
      socket.on('run.batch', (payload: unknown, ack: (r: unknown) => void) => {
        received.push(payload);
        ack({ ok: true, ackedSeq: (payload as { seq: number }).seq });
      });
      socket.on('run.started', (payload: { runId: string }, ack: (r: unknown) => void) =>
        ack({ ok: payload.runId === RUN }),
      );
    });
    await new Promise<void>((r) => http.listen(0, '127.0.0.1', r));
    url = `http://127.0.0.1:${(http.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((r) => io.close(() => r())));

  it('writes the JSON JSON.stringify writes', () => {
    const lines = {
      firstN: 41,
      count: 3,
      ts: 1_764_500_000_000.5,
      stream: 'out' as const,
      text: 'a "quote" é \\ 😀',
    };
    const entries = Array.from({ length: 3 }, (_, i) => ({
      type: 'log',
      n: 41 + i,
      ts: lines.ts,
      stream: 'out',
      text: lines.text,
    }));
    expect(floodJson(RUN, 7, lines)).toBe(JSON.stringify({ runId: RUN, seq: 7, entries }));
    expect(floodJson(RUN, 1, { ...lines, count: 0 })).toBe(
      JSON.stringify({ runId: RUN, seq: 1, entries: [] }),
    );
  });

  it('reaches the hub as the same payload `batch` sends, with its ack', async () => {
    const agent = new FakeAgent(url, 'token');
    await new Promise((r) => agent.socket.once('connect', r));
    const lines = {
      firstN: 1,
      count: 5000,
      ts: Date.now(),
      stream: 'harness' as const,
      text: 'y'.repeat(60),
    };
    const entries = Array.from({ length: lines.count }, (_, i) => ({
      type: 'log' as const,
      n: i + 1,
      ts: lines.ts,
      stream: lines.stream,
      text: lines.text,
    }));
    expect(await agent.floodBatch(RUN, 1, lines)).toEqual({ ok: true, ackedSeq: 1 });
    expect(await agent.batch(RUN, 2, entries)).toEqual({ ok: true, ackedSeq: 2 });
    // Other events are encoded as before, after a flood batch.
    expect(await agent.started(RUN)).toEqual({ ok: true });
    expect(received).toHaveLength(2);
    expect(received[0]).toEqual({ ...(received[1] as object), seq: 1 });
    expect(received[1]).toEqual({ runId: RUN, seq: 2, entries });
    agent.close();
  });
});
