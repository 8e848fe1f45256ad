import { Global, Module } from '@nestjs/common';
import { SocketServer } from './socket-server';

/** One socket.io server per process, shared by the agents and live gateways. */
@Global()
@Module({ providers: [SocketServer], exports: [SocketServer] })
export class SocketModule {}
