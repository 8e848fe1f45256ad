import { Module } from '@nestjs/common';
import { AgentsModule } from '../agents/agents.module';
import { AuthModule } from '../auth/auth.module';
import { LeaderboardsModule } from '../leaderboards/leaderboards.module';
import { RunsModule } from '../runs/runs.module';
import { TeamsModule } from '../teams/teams.module';
import { LiveGateway } from './live.gateway';
import { remoteRunLinesProvider } from './remote-run-lines';
import { SocketModule } from '../socket/socket.module';

@Module({
  imports: [SocketModule, AuthModule, TeamsModule, RunsModule, LeaderboardsModule, AgentsModule],
  providers: [LiveGateway, remoteRunLinesProvider],
})
export class LiveModule {}
