import { Module } from '@nestjs/common';
import { RunsModule } from '../runs/runs.module';
import { SocketModule } from '../socket/socket.module';
import { AgentConnections } from './agent-connections';
import { AgentSockets } from './agent-sockets';
import { AgentEvents } from './agent-events';
import { AgentsController } from './agents.controller';
import { AgentsGateway } from './agents.gateway';
import { AgentsRepository } from './agents.repository';
import { AgentsService } from './agents.service';
import { Dispatcher } from './dispatcher.service';
import { RunSweeper } from '../runs/run-sweeper.service';

@Module({
  imports: [RunsModule, SocketModule],
  controllers: [AgentsController],
  providers: [
    AgentsService,
    AgentsRepository,
    AgentConnections,
    AgentSockets,
    AgentEvents,
    AgentsGateway,
    Dispatcher,
    RunSweeper,
  ],
  exports: [AgentsService, AgentEvents],
})
export class AgentsModule {}
