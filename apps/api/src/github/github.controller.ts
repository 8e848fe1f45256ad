import {
  Body,
  Controller,
  Delete,
  Get,
  Headers,
  HttpCode,
  Param,
  Patch,
  Post,
  Query,
  Req,
  Res,
} from '@nestjs/common';
import type { Request, Response } from 'express';
import { z } from 'zod';
import { parseLimit } from '../common/cursor';
import { AppError } from '../common/errors';
import { ErrorFilter } from '../common/error.filter';
import { CurrentPrincipal, Principal, Public } from '../common/principal';
import { UuidParam } from '../common/uuid.pipe';
import { ConnectRepositoryDto, UpdateConnectionDto } from './dto';
import { GithubService } from './github.service';
import { GithubWebhooksService } from './github-webhooks.service';

const RunNowBody = z
  .object({ mode: z.enum(['public', 'official']).optional(), confirm: z.boolean().optional() })
  .strict();

type RawRequest = Request & { rawBody?: Buffer };

@Controller('api')
export class GithubController {
  constructor(
    private readonly github: GithubService,
    private readonly webhooks: GithubWebhooksService,
  ) {}

  /** Whether this hub has the GitHub App; public so the web can hide or explain the feature. */
  @Public()
  @Get('github/status')
  status() {
    return this.github.status();
  }

  /** Starts the installation: redirects to GitHub with a one-use state for this team. */
  @Get('github/install')
  async install(
    @CurrentPrincipal() principal: Principal,
    @Res() res: Response,
    @Query('team') team?: string,
    @Query('format') format?: string,
  ) {
    const url = await this.github.installUrl(
      principal,
      team ? new UuidParam('team').transform(team) : undefined,
    );
    if (format === 'json') res.json({ url });
    else res.redirect(302, url);
  }

  /**
   * GitHub's "Setup URL": binds the installation to the team that started it. Browsers are sent
   * back to the Repositories page (with the error code and message when refused); JSON clients get JSON.
   */
  @Get('github/setup')
  async setup(
    @CurrentPrincipal() principal: Principal,
    @Req() req: Request,
    @Res() res: Response,
    @Query() query: { installation_id?: string; setup_action?: string; state?: string },
  ) {
    const wantsHtml = req.accepts(['json', 'html']) === 'html';
    try {
      const result = await this.github.setup(principal, query);
      if (!wantsHtml) return void res.json(result);
      const params = new URLSearchParams(
        'pending' in result ? { pending: '1' } : { installed: result.installationId },
      );
      res.redirect(302, `/repositories?${params}`);
    } catch (err) {
      if (!wantsHtml || !(err instanceof AppError)) throw err;
      const { body } = new ErrorFilter().toBody(err);
      res.redirect(
        302,
        `/repositories?${new URLSearchParams({ github_error: body.error.code, message: body.error.message })}`,
      );
    }
  }

  /** GitHub webhook deliveries: verified, stored once, answered at once, processed in the background. */
  @Public()
  @Post('github/webhooks')
  async webhook(
    @Req() req: RawRequest,
    @Res() res: Response,
    @Headers() headers: Record<string, string | undefined>,
  ) {
    const out = await this.webhooks.receive({
      rawBody: req.rawBody,
      contentType: headers['content-type'],
      signature: headers['x-hub-signature-256'],
      event: headers['x-github-event'],
      deliveryId: headers['x-github-delivery'],
    });
    res.status(out.status).json(out.body);
  }

  /** The repositories the team's installations grant (owners and admins). */
  @Get('teams/:id/github/repositories')
  githubRepositories(
    @CurrentPrincipal() principal: Principal,
    @Param('id', new UuidParam('team')) teamId: string,
  ) {
    return this.github.githubRepositories(principal, teamId);
  }

  @Get('teams/:id/repositories')
  async list(@CurrentPrincipal() principal: Principal, @Param('id', new UuidParam('team')) teamId: string) {
    return { items: await this.github.listConnections(principal, teamId) };
  }

  @Post('teams/:id/repositories')
  connect(
    @CurrentPrincipal() principal: Principal,
    @Param('id', new UuidParam('team')) teamId: string,
    @Body() body: ConnectRepositoryDto,
  ) {
    return this.github.connect(principal, teamId, body);
  }

  @Get('teams/:id/repositories/:connId')
  get(
    @CurrentPrincipal() principal: Principal,
    @Param('id', new UuidParam('team')) teamId: string,
    @Param('connId', new UuidParam('connection')) connId: string,
  ) {
    return this.github.getConnection(principal, teamId, connId);
  }

  @Patch('teams/:id/repositories/:connId')
  update(
    @CurrentPrincipal() principal: Principal,
    @Param('id', new UuidParam('team')) teamId: string,
    @Param('connId', new UuidParam('connection')) connId: string,
    @Body() body: UpdateConnectionDto,
  ) {
    return this.github.update(principal, teamId, connId, body);
  }

  @Delete('teams/:id/repositories/:connId')
  disconnect(
    @CurrentPrincipal() principal: Principal,
    @Param('id', new UuidParam('team')) teamId: string,
    @Param('connId', new UuidParam('connection')) connId: string,
  ) {
    return this.github.disconnect(principal, teamId, connId);
  }

  /** Run now: the default branch's latest commit, once; any member. */
  @Post('teams/:id/repositories/:connId/run')
  async runNow(
    @CurrentPrincipal() principal: Principal,
    @Param('id', new UuidParam('team')) teamId: string,
    @Param('connId', new UuidParam('connection')) connId: string,
    @Body() body: unknown,
    @Headers('idempotency-key') key: string | undefined,
    @Res({ passthrough: true }) res: Response,
  ) {
    const out = await this.github.runNow(principal, teamId, connId, RunNowBody.parse(body ?? {}), key);
    res.status(out.replayed ? 200 : 201);
    if (out.replayed) res.setHeader('Idempotent-Replayed', 'true');
    return out;
  }

  @Get('teams/:id/repositories/:connId/deliveries')
  deliveries(
    @CurrentPrincipal() principal: Principal,
    @Param('id', new UuidParam('team')) teamId: string,
    @Param('connId', new UuidParam('connection')) connId: string,
    @Query('limit') limit?: string,
  ) {
    return this.github.deliveries(principal, teamId, connId, parseLimit(limit, 20, 100));
  }

  @Post('teams/:id/repositories/:connId/deliveries/:deliveryId/redeliver')
  @HttpCode(202)
  redeliver(
    @CurrentPrincipal() principal: Principal,
    @Param('id', new UuidParam('team')) teamId: string,
    @Param('connId', new UuidParam('connection')) connId: string,
    @Param('deliveryId', new UuidParam('delivery')) deliveryId: string,
  ) {
    return this.github.redeliver(principal, teamId, connId, deliveryId);
  }
}
