import {
  BeforeApplicationShutdown,
  Inject,
  Injectable,
  OnApplicationShutdown,
  OnModuleInit,
} from '@nestjs/common';
import type { createClient } from 'redis';
import type { Namespace, Server, Socket } from 'socket.io';
import { closeRedisClient } from '../common/redis-shutdown';
import type { AgentToServerEvents, LiveClientEvents, LiveEmits, ServerToAgentEvents } from '@dryft/libs';
import { CONFIG, Config } from '../config/config';
import type { AgentReplicaMessages, LiveReplicaMessages } from './replica-messages';

type RedisClient = ReturnType<typeof createClient>;

/**
 * `/live` typed by the contract (libs/src/protocol/live.ts): what clients send, what the hub emits,
 * what replicas tell each other (replica-messages.ts).
 */
export type LiveNamespace = Namespace<LiveClientEvents, LiveEmits, LiveReplicaMessages>;
export type LiveSocket = Socket<LiveClientEvents, LiveEmits, LiveReplicaMessages>;

/** What the `/agents` handshake stores on a socket: the authenticated agent. */
export type AgentSocketData = { agentId: string; agentName: string };
/** `/agents` typed by the contract (libs/src/protocol/agents.ts) at the hub's end; the gpu-agent's client uses the same maps. */
export type AgentsNamespace = Namespace<
  AgentToServerEvents,
  ServerToAgentEvents,
  AgentReplicaMessages,
  AgentSocketData
>;
export type AgentSocket = Socket<
  AgentToServerEvents,
  ServerToAgentEvents,
  AgentReplicaMessages,
  AgentSocketData
>;

/**
 * The one socket.io server of this API process, as the rest of the hub sees it: the namespaces
 * (typed), the Redis clients, readiness, and shutdown. HubIoAdapter (hub-io-adapter.ts) creates
 * the server when Nest connects the gateways (`app.init()`) and hands it, and with REDIS_URL the
 * Redis clients, to this provider. With REDIS_URL the namespaces use the Redis streams adapter,
 * so rooms, broadcasts and `serverSideEmit` span every replica of the hub.
 */
@Injectable()
export class SocketServer implements OnModuleInit, BeforeApplicationShutdown, OnApplicationShutdown {
  private server?: Server;
  private redis?: RedisClient;
  /** A connection of its own for per-run pub/sub (live/remote-run-lines.ts): a subscribed one can do nothing else. */
  private subscriber?: RedisClient;
  /** Unique per process: lets a replica recognise its own cross-replica messages. */
  readonly replicaId = `${process.pid}-${Math.random().toString(36).slice(2, 8)}`;

  constructor(@Inject(CONFIG) private readonly config: Config) {}

  /** The server HubIoAdapter created; once per process. */
  attach(server: Server): void {
    if (this.server) throw new Error('socket.io server already attached');
    this.server = server;
  }

  /** The adapter's Redis client and the run-lines subscriber, both connected (HubIoAdapter.connectToRedis). */
  useRedis(publisher: RedisClient, subscriber: RedisClient): void {
    this.redis = publisher;
    this.subscriber = subscriber;
  }

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
  get pubSub(): { publisher: RedisClient; subscriber: RedisClient } | undefined {
    return this.redis && this.subscriber ? { publisher: this.redis, subscriber: this.subscriber } : undefined;
  }

  /** The `/live` namespace, typed: an emit whose name or payload is not in the contract does not compile. */
  get live(): LiveNamespace {
    return this.io.of('/live') as unknown as LiveNamespace;
  }

  /** The `/agents` namespace, typed the same way (agents/agents-namespace.ts is its one writer). */
  get agents(): AgentsNamespace {
    return this.io.of('/agents') as unknown as AgentsNamespace;
  }

  /** Why this replica cannot serve sockets now (its socket.io server not attached), or null. */
  socketsProblem(): string | null {
    if (!this.server) return 'the socket.io server is not started';
    return null;
  }

  /** Why Redis (REDIS_URL) does not answer now, or null when it does; undefined without REDIS_URL. */
  async redisProblem(timeoutMs: number): Promise<string | null | undefined> {
    if (!this.config.REDIS_URL) return undefined;
    const client = this.redis;
    if (!client?.isReady) return 'not connected (reconnecting)';
    let timer: NodeJS.Timeout | undefined;
    // A PING that loses the race may still fail later (ECONNRESET once the link is cut): handled
    // here, or it would be an unhandled rejection of the process.
    const ping = client.ping();
    ping.catch(() => undefined);
    try {
      await Promise.race([
        ping,
        new Promise((_, reject) => {
          timer = setTimeout(() => reject(new Error(`no answer to PING within ${timeoutMs} ms`)), timeoutMs);
        }),
      ]);
      return null;
    } catch (err) {
      return (err as Error).message;
    } finally {
      clearTimeout(timer);
    }
  }

  /** The gateways have been connected by now (app.init): without HubIoAdapter there is no hub server. */
  onModuleInit(): void {
    if (!this.server)
      throw new Error('socket.io server not created: install HubIoAdapter (useHubSockets) before app.init()');
    if (this.config.REDIS_URL && !this.redis)
      throw new Error('REDIS_URL is set but Redis was not connected: call useHubSockets before app.init()');
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
      await closeRedisClient(this.subscriber);
      this.subscriber = undefined;
    }
    if (this.redis) {
      await closeRedisClient(this.redis);
      this.redis = undefined;
    }
  }
}
