import { EventEmitter } from 'node:events';
import { createServer } from 'node:http';
import { ExecutionContextHost } from '@nestjs/core/helpers/execution-context-host';
import type { MessageMappingProperties } from '@nestjs/websockets';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { Config } from '../src/config/config';
import { adapterRedisClient, HUB_SOCKET_OPTIONS, HubIoAdapter } from '../src/socket/hub-io-adapter';
import {
  AckExceptionFilter,
  ExtraArguments,
  type FailedEvent,
  MalformedPayload,
  ZodPayloadPipe,
} from '../src/socket/socket-payloads';
import { SocketServer } from '../src/socket/socket-server';

const adapter = (sockets = {} as SocketServer, http?: unknown) =>
  new HubIoAdapter(http as never, { REDIS_URL: '' } as Config, sockets);

/** A socket as bindMessageHandlers sees it; `send` is what a client sends, resolving with the ack. */
function fakeSocket() {
  const socket = new EventEmitter() as EventEmitter & { emitted: unknown[] };
  const emit = socket.emit.bind(socket);
  const send = (event: string, ...args: unknown[]) =>
    new Promise<unknown>((resolve) => emit(event, ...args, resolve));
  return { socket, send };
}

describe('HubIoAdapter: messages reach gateway handlers as the protocols define them', () => {
  const bind = (callback: MessageMappingProperties['callback']) => {
    const { socket, send } = fakeSocket();
    const seen: unknown[][] = [];
    adapter().bindMessageHandlers(socket as never, [
      {
        message: 'run.join',
        callback: (...args: unknown[]) => (seen.push(args), callback(...args)),
      },
    ]);
    return { socket, send, seen };
  };

  it('passes the payload and the ack; the answer is the ack, even one with an `event` field', async () => {
    const { send, seen, socket } = bind(async (payload) => ({ ok: true, event: 'run.status', payload }));
    const emitted: string[] = [];
    const emit = socket.emit.bind(socket);
    socket.emit = (event: string, ...args: unknown[]) => (emitted.push(event), emit(event, ...args));
    expect(await send('run.join', { runId: 'r1' })).toEqual({
      ok: true,
      event: 'run.status',
      payload: { runId: 'r1' },
    });
    expect(seen[0][0]).toEqual({ runId: 'r1' });
    expect(typeof seen[0][1]).toBe('function');
    expect(emitted).toEqual([]);
  });

  it('a message sent without a payload reaches the handler as undefined, with its ack', async () => {
    const { send, seen } = bind(async (payload) => ({ ok: true, payload: payload ?? null }));
    expect(await send('run.join')).toEqual({ ok: true, payload: null });
    expect(seen[0][0]).toBeUndefined();
  });

  it('extra arguments reach the pipe as ExtraArguments, never as an array payload', async () => {
    const { send, seen } = bind(async () => ({ ok: true }));
    await send('run.join', { runId: 'r1' }, 'more');
    const payload = seen[0][0];
    expect(payload).toBeInstanceOf(ExtraArguments);
    expect((payload as ExtraArguments).args).toEqual([{ runId: 'r1' }, 'more']);
  });

  it('a message without an ack is handled, and nothing is answered', async () => {
    const { socket, seen } = bind(async () => ({ ok: true }));
    socket.emit('run.join', { runId: 'r1' });
    await new Promise((r) => setImmediate(r));
    expect(seen[0][0]).toEqual({ runId: 'r1' });
    expect(typeof seen[0][1]).toBe('function');
  });

  it('an empty answer (the filter already answered) is not acked again', async () => {
    const acks: unknown[] = [];
    const { socket } = bind(async () => undefined);
    socket.emit('run.join', {}, (a: unknown) => acks.push(a));
    await new Promise((r) => setImmediate(r));
    expect(acks).toEqual([]);
  });

  it('makes one server on the HTTP server with the hub options, handed to SocketServer; no other port', async () => {
    const http = createServer();
    const sockets = new SocketServer({ REDIS_URL: '' } as Config);
    expect(() => sockets.onModuleInit()).toThrow(/HubIoAdapter/);
    const io = adapter(sockets, http);
    expect(() => io.createIOServer(3000)).toThrow(/takes no port/);
    const server = io.createIOServer(0);
    expect(sockets.io).toBe(server);
    expect(server.engine.opts.maxHttpBufferSize).toBe(HUB_SOCKET_OPTIONS.maxHttpBufferSize);
    expect(server.engine.opts.pingInterval).toBe(10_000);
    expect(() => sockets.onModuleInit()).not.toThrow();
    expect(() => sockets.attach(server)).toThrow(/already/);
    await sockets.beforeApplicationShutdown();
    await sockets.onApplicationShutdown();
  });
});

describe('ZodPayloadPipe and AckExceptionFilter', () => {
  const schema = z.object({ runId: z.string() });

  it('parses with the schema, takes a missing payload as `empty`, refuses with the issues', () => {
    const pipe = new ZodPayloadPipe(schema, { runId: 'default' });
    expect(pipe.transform({ runId: 'r1' })).toEqual({ runId: 'r1' });
    expect(pipe.transform(undefined)).toEqual({ runId: 'default' });
    expect(() => pipe.transform({ runId: 7 })).toThrow(MalformedPayload);
    expect(() => pipe.transform({ runId: 7 })).toThrow(/^runId: Invalid input: expected string/);
    expect(() => pipe.transform(new ExtraArguments('run.join', [1, 2]))).toThrow(
      'payload: run.join takes one payload (an object) and an ack; it was sent 2 arguments',
    );
  });

  it("answers the ack with the subclass's answer and sends nothing else", () => {
    const failures: FailedEvent[] = [];
    class Filter extends AckExceptionFilter {
      protected answer(err: unknown, failed: FailedEvent) {
        failures.push(failed);
        return { ok: false, error: { code: 'x', message: (err as Error).message } };
      }
    }
    const acks: unknown[] = [];
    const client = { emit: () => expect.unreachable('nothing is emitted') };
    const host = new ExecutionContextHost([
      client,
      { runId: 'r1' },
      (a: unknown) => acks.push(a),
      'run.join',
    ]);
    host.setType('ws');
    new Filter().catch(new Error('boom'), host);
    expect(acks).toEqual([{ ok: false, error: { code: 'x', message: 'boom' } }]);
    expect(failures).toEqual([{ event: 'run.join', payload: { runId: 'r1' }, client }]);
  });
});

describe('adapterRedisClient: the streams adapter’s commands never fail unhandled', () => {
  /** A client whose commands fail as on a reset link; its own state kept in a private field. */
  class FakeClient {
    #name: string;
    constructor(name = 'main') {
      this.#name = name;
    }
    get name() {
      return this.#name;
    }
    publish(): Promise<number> {
      return Promise.reject(new Error(`${this.#name}: read ECONNRESET`));
    }
    subscribe(): Promise<void> {
      return Promise.reject(new Error(`${this.#name}: socket closed unexpectedly`));
    }
    duplicate(): FakeClient {
      return new FakeClient(`${this.#name} copy`);
    }
  }

  it('handles a command whose promise the caller drops, and still rejects for a caller that waits', async () => {
    const unhandled: unknown[] = [];
    const record = (reason: unknown) => void unhandled.push(reason);
    process.on('unhandledRejection', record);
    const failed: string[] = [];
    try {
      const client = adapterRedisClient(new FakeClient() as never, (err) =>
        failed.push((err as Error).message),
      );
      const c = client as unknown as FakeClient;
      expect(c.name).toBe('main');
      void c.publish(); // as the adapter sends an ephemeral message: fired, not waited on
      const copy = c.duplicate();
      expect(copy.name).toBe('main copy');
      void copy.subscribe();
      await expect(c.publish()).rejects.toThrow(/ECONNRESET/);
      await new Promise((r) => setTimeout(r, 20));
    } finally {
      process.off('unhandledRejection', record);
    }
    expect(unhandled).toEqual([]);
    expect(failed).toEqual([
      'main: read ECONNRESET',
      'main copy: socket closed unexpectedly',
      'main: read ECONNRESET',
    ]);
  });
});
