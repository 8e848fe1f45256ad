import { EXCEPTION_FILTERS_METADATA, ROUTE_ARGS_METADATA } from '@nestjs/common/constants';
import { EventEmitter } from 'node:events';
import { Module, type PipeTransform, type Provider, type Type, type WsExceptionFilter } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { ExecutionContextHost } from '@nestjs/core/helpers/execution-context-host';
import type { MessageMappingProperties } from '@nestjs/websockets';
import { MESSAGE_MAPPING_METADATA, MESSAGE_METADATA } from '@nestjs/websockets/constants';
import { WsParamtype } from '@nestjs/websockets/enums/ws-paramtype.enum';
import type { Config } from '../../src/config/config';
import { HubIoAdapter } from '../../src/socket/hub-io-adapter';
import type { SocketServer } from '../../src/socket/socket-server';

type Method = (...args: unknown[]) => unknown;

/** The `@SubscribeMessage` methods of a gateway: event name to method name. */
export function subscribedEvents(gateway: object): Map<string, string> {
  const proto = Object.getPrototypeOf(gateway) as object;
  const events = new Map<string, string>();
  for (const name of Object.getOwnPropertyNames(proto)) {
    // The descriptor, not the property: a getter is not to be run on the prototype.
    const method: unknown = Object.getOwnPropertyDescriptor(proto, name)?.value;
    if (typeof method !== 'function' || !Reflect.getMetadata(MESSAGE_MAPPING_METADATA, method)) continue;
    events.set(String(Reflect.getMetadata(MESSAGE_METADATA, method)), name);
  }
  return events;
}

/**
 * Binds a gateway's `@SubscribeMessage` methods to a fake socket the way the running hub does,
 * without a server: HubIoAdapter's own `bindMessageHandlers`, the parameters the methods declare
 * (`@ConnectedSocket`, `@MessageBody` with its pipes) and the gateway's `@UseFilters` filter. Only
 * what Nest's context creator does for these gateways is stood in for (no guards, no interceptors).
 */
export function bindGateway(gateway: object, socket: unknown): void {
  const type = gateway.constructor;
  const filters = (Reflect.getMetadata(EXCEPTION_FILTERS_METADATA, type) ?? []) as WsExceptionFilter[];
  const handlers: MessageMappingProperties[] = [];
  for (const [message, name] of subscribedEvents(gateway)) {
    const method = (gateway as Record<string, Method>)[name];
    const params = (Reflect.getMetadata(ROUTE_ARGS_METADATA, type, name) ?? {}) as Record<
      string,
      { index: number; pipes: PipeTransform[] }
    >;
    handlers.push({
      message,
      callback: async (payload: unknown, ack: unknown) => {
        try {
          const args: unknown[] = [];
          for (const [key, { index, pipes }] of Object.entries(params)) {
            const paramType = Number(key.split(':')[0]);
            if (paramType === WsParamtype.SOCKET) args[index] = socket;
            else if (paramType === WsParamtype.PAYLOAD) {
              let value = payload;
              for (const pipe of pipes) value = await pipe.transform(value, { type: 'body' });
              args[index] = value;
            } else if (paramType === WsParamtype.ACK) args[index] = ack;
          }
          return await method.apply(gateway, args);
        } catch (err) {
          const host = new ExecutionContextHost([socket, payload, ack, message]);
          host.setType('ws');
          if (!filters[0]) throw err;
          filters[0].catch(err, host);
          return undefined;
        }
      },
    });
  }
  new HubIoAdapter(undefined as never, {} as Config, {} as SocketServer).bindMessageHandlers(
    socket as never,
    handlers,
  );
}

/**
 * A gateway in a real Nest application on HubIoAdapter, without a listening server: Nest's own
 * context creator (pipes, filters) and connection handler. `connect` hands Nest a socket as
 * socket.io would after the handshake. `providers`: the gateway's collaborators (`useValue`).
 */
export async function nestGateway(gateway: Type, providers: Provider[]) {
  const connections = new Map<string, (socket: unknown) => void>();
  class CapturingAdapter extends HubIoAdapter {
    override bindClientConnect(server: { name: string }, callback: (socket: unknown) => void): void {
      connections.set(server.name, callback);
    }
  }
  @Module({ providers: [gateway, ...providers] })
  class GatewayModule {}
  const app = await NestFactory.create(GatewayModule, { logger: false });
  const sockets = { attach: () => undefined, useRedis: () => undefined } as unknown as SocketServer;
  app.useWebSocketAdapter(new CapturingAdapter(app, { REDIS_URL: '' } as Config, sockets));
  await app.init();
  const [namespace] = [...connections.keys()];
  return {
    namespace,
    instance: app.get(gateway) as unknown,
    connect: (socket: unknown) => connections.get(namespace)!(socket),
    close: () => app.close(),
  };
}

/**
 * A socket as Nest's connection handler and the gateways use it: listeners (the catch-all ones
 * first, as socket.io calls them), rooms, `data`; `send` resolves with the ack; `emitted` records
 * what the server sent it (nothing, for an ack).
 */
export function eventSocket(data: Record<string, unknown>) {
  const emitter = new EventEmitter();
  const any: ((event: string, ...args: unknown[]) => void)[] = [];
  const emitted: { event: string; args: unknown[] }[] = [];
  const socket = Object.assign(emitter, {
    id: `s-${Math.random().toString(36).slice(2, 8)}`,
    data,
    rooms: new Set<string>(),
    handshake: { auth: {}, headers: {} },
    onAny: (listener: (event: string, ...args: unknown[]) => void) => void any.push(listener),
    join: async (room: string) => void socket.rooms.add(room),
    leave: async (room: string) => void socket.rooms.delete(room),
  });
  const deliver = emitter.emit.bind(emitter);
  socket.emit = (event: string | symbol, ...args: unknown[]) => {
    emitted.push({ event: String(event), args });
    return true;
  };
  /** What a client sends: resolves with the ack. */
  const send = (event: string, ...args: unknown[]) =>
    new Promise<Record<string, unknown>>((resolve) => {
      for (const l of any) l(event, ...args, resolve);
      deliver(event, ...args, resolve);
    });
  return { socket, send, emitted, deliver };
}
