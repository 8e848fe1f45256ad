import {
  BeforeApplicationShutdown,
  Inject,
  Injectable,
  Logger,
  OnApplicationShutdown,
  OnModuleInit,
} from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import { createAdapter } from '@socket.io/redis-streams-adapter';
import type { Server as HttpServer } from 'node:http';
import { createClient } from 'redis';
import { Server } from 'socket.io';
import type { DefaultEventsMap, Namespace, Socket } from 'socket.io';
import type { LiveEmits } from '@dryft/libs';
import { CONFIG, Config } from '../config/config';

/** `/live` with its emits typed by the contract (libs/src/protocol/live.ts, LiveServerToClient). */
export type LiveNamespace = Namespace<DefaultEventsMap, LiveEmits>;
export type LiveSocket = Socket<DefaultEventsMap, LiveEmits>;

/**
 * The one socket.io server of this API process, attached to Nest's HTTP server, serving the
 * `/agents` and `/live` namespaces. With REDIS_URL the namespaces use the Redis streams adapter, so
 * rooms, broadcasts and `serverSideEmit` span every replica of the hub.
 *
 * Connection-state recovery is deliberately off: both protocols resume by their own cursors (batch
 * seq for agents, `afterSeq` for watchers), and every reconnect passes the authentication middleware
 * again, so a revoked token can never slip back in through a recovered session.
 */
@Injectable()
export class SocketServer implements OnModuleInit, BeforeApplicationShutdown, OnApplicationShutdown {
  private readonly logger = new Logger('Sockets');
  private server?: Server;
  private redis?: ReturnType<typeof createClient>;
  /** A connection of its own for per-run pub/sub (live/remote-run-lines.ts): a subscribed one can do nothing else. */
  private subscriber?: ReturnType<typeof createClient>;
  /** Unique per process: lets a replica recognise its own cross-replica messages. */
  readonly replicaId = `${process.pid}-${Math.random().toString(36).slice(2, 8)}`;

  constructor(
    private readonly adapterHost: HttpAdapterHost,
    @Inject(CONFIG) private readonly config: Config,
  ) {}

  /** Whether other replicas can exist (the in-memory adapter refuses serverSideEmit). */
  get clustered(): boolean {
    return Boolean(this.config.REDIS_URL);
  }

  get io(): Server {
    if (!this.server) throw new Error('socket.io server not started');
    return this.server;
  }

  /**
   * With REDIS_URL: the adapter's client (for publishing) and a subscriber connection, both
   * connected once this module is initialised; undefined with one process.
   */
  get pubSub():
    { publisher: ReturnType<typeof createClient>; subscriber: ReturnType<typeof createClient> } | undefined {
    return this.redis && this.subscriber ? { publisher: this.redis, subscriber: this.subscriber } : undefined;
  }

  /** The `/live` namespace, typed: an emit whose name or payload is not in the contract does not compile. */
  get live(): LiveNamespace {
    return this.io.of('/live') as unknown as LiveNamespace;
  }

  async onModuleInit(): Promise<void> {
    const http = this.adapterHost.httpAdapter.getHttpServer() as HttpServer;
    const options: ConstructorParameters<typeof Server>[1] = {
      serveClient: false,
      // Log batches are capped at 5,000 lines of ≤16 KiB; leave room for a full batch.
      maxHttpBufferSize: 8 * 1024 * 1024,
      pingInterval: 10_000,
      pingTimeout: 8_000,
      cors: { origin: false },
    };
    if (this.config.REDIS_URL) {
      const client = createClient({ url: this.config.REDIS_URL });
      client.on('error', (err) => this.logger.error(`redis: ${(err as Error).message}`));
      await client.connect();
      this.redis = client;
      const subscriber = client.duplicate();
      subscriber.on('error', (err) => this.logger.error(`redis (run lines): ${(err as Error).message}`));
      await subscriber.connect();
      this.subscriber = subscriber;
      options.adapter = createAdapter(client, {
        streamName: this.config.REDIS_STREAM,
        channelPrefix: this.config.REDIS_STREAM,
        onlyPlaintext: true,
        // Each replica answers cluster requests (fetchSockets, acks across replicas) within this.
        heartbeatInterval: 2_000,
        heartbeatTimeout: 6_000,
      }) as unknown as NonNullable<typeof options.adapter>;
      this.logger.log(`socket.io rooms shared through Redis (stream ${this.config.REDIS_STREAM})`);
    }
    this.server = new Server(http, options);
  }

  /** Close sockets before Nest closes the HTTP server, which would otherwise wait for them. */
  async beforeApplicationShutdown(): Promise<void> {
    if (!this.server) return;
    this.server.local.disconnectSockets(true);
    for (const nsp of this.server._nsps.values()) nsp.local.disconnectSockets(true);
    this.server.engine.close();
  }

  async onApplicationShutdown(): Promise<void> {
    if (this.server) {
      for (const nsp of this.server._nsps.values()) {
        try {
          await (nsp.adapter as unknown as { close?: () => Promise<void> | void }).close?.();
        } catch {
          /* the adapter may already be closed */
        }
      }
    }
    if (this.subscriber) {
      await this.subscriber.quit().catch(() => undefined);
      this.subscriber = undefined;
    }
    if (this.redis) {
      await this.redis.quit().catch(() => undefined);
      this.redis = undefined;
    }
  }
}
