import type { INestApplication } from '@nestjs/common';
import { Logger } from '@nestjs/common';
import { IoAdapter } from '@nestjs/platform-socket.io';
import type { MessageMappingProperties } from '@nestjs/websockets';
import { createAdapter } from '@socket.io/redis-streams-adapter';
import { createClient } from 'redis';
import { closeRedisClient } from '../common/redis-shutdown';
import { Server, type ServerOptions, type Socket } from 'socket.io';
import { LATENCY_TRACE, traceNow } from '../common/latency-trace';
import type { Config } from '../config/config';
import { arrivals, ExtraArguments } from './socket-payloads';
import { SocketServer } from './socket-server';

/**
 * The options of the hub's one socket.io server. Connection-state recovery is deliberately off:
 * both protocols resume by their own cursors (batch seq for agents, `afterSeq` for watchers), and
 * every reconnect passes the handshake again, so a revoked token can never slip back in through a
 * recovered session.
 */
export const HUB_SOCKET_OPTIONS: Partial<ServerOptions> = {
  serveClient: false,
  // Log batches are capped at 5,000 lines of ≤16 KiB; leave room for a full batch.
  maxHttpBufferSize: 8 * 1024 * 1024,
  pingInterval: 10_000,
  pingTimeout: 8_000,
  cors: { origin: false },
};

type RedisClient = ReturnType<typeof createClient>;

/**
 * `client` as the Redis streams adapter gets it: the same connection, whose every command's promise
 * has a rejection handler (`onFailed`) besides whatever the caller does with it, and whose
 * duplicates (the adapter's XREAD and SUBSCRIBE connections) are seen the same way.
 *
 * The adapter (0.3.1) fires some commands and drops their promise: the PUBLISH of every ephemeral
 * message (`serverSideEmit`, such as the dispatcher's nudge to other replicas; fetchSockets'
 * request; a broadcast with acks), its SUBSCRIBE, a session's SET. One still in flight when the link
 * resets rejects (`read ECONNRESET`, or the socket closed), and nobody handles that rejection: a
 * process-level unhandled rejection (CI saw one when the readiness test cut Redis). What such a
 * message carried is lost either way, as any cross-replica message can be while Redis is away
 * (the dispatcher's fallback pass stands in for a lost nudge); the client's 'error' listener says
 * why. A caller that waits on a command (XADD, XREAD, PUBSUB) still gets its rejection.
 */
export function adapterRedisClient(client: RedisClient, onFailed: (err: unknown) => void): RedisClient {
  return new Proxy(client, {
    get(target, prop) {
      const value: unknown = Reflect.get(target, prop, target);
      if (typeof value !== 'function' || prop === 'constructor') return value;
      return (...args: unknown[]) => {
        const result: unknown = (value as (...a: unknown[]) => unknown).apply(target, args);
        if (result instanceof Promise) result.catch(onFailed);
        if (prop === 'duplicate') return adapterRedisClient(result as RedisClient, onFailed);
        return result;
      };
    },
  });
}

type Reply = (answer: unknown) => void;
const NO_REPLY: Reply = () => undefined;

/**
 * Nest's socket.io adapter for the hub: one server on Nest's HTTP server with
 * {@link HUB_SOCKET_OPTIONS} (a gateway's own options are not used: every namespace shares this
 * server), and with REDIS_URL the Redis streams adapter, so rooms, broadcasts and `serverSideEmit`
 * span every replica. The server and the Redis clients are handed to {@link SocketServer}, which the
 * rest of the hub reads them from and which closes them at shutdown.
 *
 * An event reaches a gateway's `@SubscribeMessage` method the way the hub's protocols define it,
 * not the way IoAdapter passes it: the ack is the last argument when the client sent one (sent
 * without a payload, the ack comes first), extra arguments reach the payload pipe as
 * {@link ExtraArguments} (a refusal, never a payload), a handler's answer is always the ack (an
 * answer with an `event` field is not emitted as an event), and no rxjs pipeline runs per message.
 */
export class HubIoAdapter extends IoAdapter {
  private readonly logger = new Logger('Sockets');
  private adapterFactory?: ServerOptions['adapter'];

  constructor(
    app: INestApplication,
    private readonly config: Config,
    private readonly sockets: SocketServer,
  ) {
    super(app);
  }

  /**
   * With REDIS_URL: connects the streams adapter's client and a subscriber of its own (per-run
   * pub/sub, live/remote-run-lines.ts: a subscribed connection can do nothing else). Called before
   * `app.init()`, which is when the gateways create the server.
   */
  async connectToRedis(): Promise<void> {
    if (!this.config.REDIS_URL) return;
    const client = createClient({ url: this.config.REDIS_URL });
    client.on('error', (err) => this.logger.error(`redis: ${(err as Error).message}`));
    await client.connect();
    const subscriber = client.duplicate();
    subscriber.on('error', (err) => this.logger.error(`redis (run lines): ${(err as Error).message}`));
    try {
      await subscriber.connect();
    } catch (err) {
      await closeRedisClient(client);
      throw err;
    }
    this.sockets.useRedis(client, subscriber);
    const adapterClient = adapterRedisClient(client, (err) =>
      this.logger.debug(`redis (adapter): a command failed: ${(err as Error)?.message ?? err}`),
    );
    this.adapterFactory = createAdapter(adapterClient, {
      streamName: this.config.REDIS_STREAM,
      channelPrefix: this.config.REDIS_STREAM,
      onlyPlaintext: true,
      // Each replica answers cluster requests (fetchSockets, acks across replicas) within this.
      heartbeatInterval: 2_000,
      heartbeatTimeout: 6_000,
    }) as unknown as ServerOptions['adapter'];
    this.logger.log(`socket.io rooms shared through Redis (stream ${this.config.REDIS_STREAM})`);
  }

  override createIOServer(port: number): Server {
    if (port !== 0 || !this.httpServer)
      throw new Error('the hub serves socket.io on its HTTP server only: a gateway takes no port');
    const options: Partial<ServerOptions> = { ...HUB_SOCKET_OPTIONS };
    if (this.adapterFactory) options.adapter = this.adapterFactory;
    const server = new Server(this.httpServer, options);
    this.sockets.attach(server);
    return server;
  }

  override bindMessageHandlers(socket: Socket, handlers: MessageMappingProperties[]): void {
    for (const { message, callback, isAckHandledManually } of handlers) {
      const event = String(message);
      socket.on(event, (...args: unknown[]) => {
        const at = LATENCY_TRACE ? traceNow() : 0;
        const last = args[args.length - 1];
        const reply = typeof last === 'function' ? (args.pop() as Reply) : NO_REPLY;
        const payload = args.length > 1 ? new ExtraArguments(event, args) : args[0];
        if (at && typeof payload === 'object' && payload !== null) arrivals.set(payload, at);
        // Nest's handler: guards, pipes and the gateway's exception filter (which answers `reply`
        // itself and leaves undefined here).
        Promise.resolve(callback(payload, reply) as unknown).then(
          (answer) => {
            if (answer !== undefined && answer !== null && !isAckHandledManually) reply(answer);
          },
          (err: unknown) => this.logger.error(`${event}: unanswered: ${(err as Error).stack ?? err}`),
        );
      });
    }
  }

  /** The server is closed by SocketServer's shutdown hooks (sockets first, then the HTTP server, then Redis). */
  override async close(): Promise<void> {}
}

/** Installs the hub's adapter on `app` (connecting Redis first when set); before `app.init()`. */
export async function useHubSockets(app: INestApplication, config: Config): Promise<void> {
  const adapter = new HubIoAdapter(app, config, app.get(SocketServer));
  await adapter.connectToRedis();
  app.useWebSocketAdapter(adapter);
}
