import {
  Body,
  Controller,
  Delete,
  Get,
  Headers,
  HttpCode,
  Param,
  Post,
  Query,
  Res,
  UseGuards,
} from '@nestjs/common';
import type { AgentView, CreatedAgentView, QueueSummary } from '@dryft/libs';
import type { Response } from 'express';
import { z } from 'zod';
import { AdminGuard } from '../common/admin.guard';
import { gone } from './errors';
import { CurrentPrincipal, Principal, Public } from '../common/principal';
import { UuidParam } from '../common/uuid.pipe';
import { WaitingService } from '../runs/waiting.service';
import { ArtifactStore } from '../submissions/artifact-store';
import { AgentsGateway } from './agents.gateway';
import { AgentsService } from './agents.service';
import { CreateAgentDto, DrainAgentDto } from './dto';
import { hashToken } from '@dryft/libs/node';

/** The header agents send on REST calls (the bearer slot belongs to team API tokens). */
export const AGENT_TOKEN_HEADER = 'x-agent-token';

@Controller()
export class AgentsController {
  constructor(
    private readonly agents: AgentsService,
    private readonly gateway: AgentsGateway,
    private readonly artifacts: ArtifactStore,
    private readonly waiting: WaitingService,
  ) {}

  /** Runs waiting per benchmark and the capacity that could take them. */
  @UseGuards(AdminGuard)
  @Get('api/admin/queue')
  queue(): Promise<QueueSummary[]> {
    return this.waiting.queue();
  }

  @UseGuards(AdminGuard)
  @Get('api/admin/agents')
  list(): Promise<AgentView[]> {
    return this.agents.list();
  }

  /** The only response that ever contains the agent's token. */
  @UseGuards(AdminGuard)
  @Post('api/admin/agents')
  async create(
    @CurrentPrincipal() principal: Principal,
    @Body() body: CreateAgentDto,
  ): Promise<z.infer<typeof CreatedAgentView>> {
    return this.agents.create(principal, body.name);
  }

  @UseGuards(AdminGuard)
  @Post('api/admin/agents/:id/drain')
  @HttpCode(200)
  async drain(
    @CurrentPrincipal() principal: Principal,
    @Param('id', new UuidParam('agent')) id: string,
    @Body() body: DrainAgentDto,
    @Query('reason') reason?: string,
  ): Promise<AgentView> {
    const view = await this.agents.setDraining(principal, id, body.draining, reason?.trim() || null);
    this.gateway.drain(id, body.draining);
    return view;
  }

  /** Revoke: the token stops working at once, the agent is disconnected, its runs fail as infra_error. */
  @UseGuards(AdminGuard)
  @Delete('api/admin/agents/:id')
  async revoke(
    @CurrentPrincipal() principal: Principal,
    @Param('id', new UuidParam('agent')) id: string,
    @Query('reason') reason?: string,
  ): Promise<AgentView> {
    const { agent, runIds } = await this.agents.revoke(principal, id, reason?.trim() || null);
    await this.gateway.revoke(id, runIds);
    return { ...agent, currentRuns: [], busySlots: 0 };
  }

  /**
   * The submission bytes of an assigned run, once: the token in the URL is single-use and bound to
   * the agent the run was assigned to, which authenticates with its own token in X-Agent-Token.
   */
  @Public()
  @Get('api/agent/downloads/:token')
  async download(
    @Param('token') token: string,
    @Headers(AGENT_TOKEN_HEADER) agentToken: string | undefined,
    @Res() res: Response,
  ): Promise<void> {
    const agent = await this.agents.authenticate(agentToken);
    const found = await this.agents.consumeDownload(hashToken(token), agent.id);
    if (!found)
      throw gone(
        'download_used_or_unknown',
        'This download link was already used, or belongs to another agent or a finished run.',
      );
    const bytes = await this.artifacts.read(found.submission.sha256);
    res.setHeader('Content-Type', 'application/octet-stream');
    res.setHeader('Content-Length', String(bytes.length));
    res.setHeader('X-Content-SHA256', found.submission.sha256);
    res.setHeader('Cache-Control', 'no-store');
    res.status(200).end(bytes);
  }
}
