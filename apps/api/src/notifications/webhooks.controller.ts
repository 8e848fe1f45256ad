import { Body, Controller, Delete, Get, Param, Post } from '@nestjs/common';
import type { WebhookDeliveryView, WebhookView } from '@dryft/libs';
import { CurrentPrincipal, Principal } from '../common/principal';
import { UuidParam } from '../common/uuid.pipe';
import { CreateWebhookDto } from './dto';
import { WebhooksService } from './webhooks.service';

/** Team owners manage outgoing webhooks (signed in to the web; API tokens cannot). */
@Controller('api/teams/:teamId/webhooks')
export class WebhooksController {
  constructor(private readonly webhooks: WebhooksService) {}

  @Post()
  create(
    @CurrentPrincipal() principal: Principal,
    @Param('teamId', new UuidParam('team')) teamId: string,
    @Body() body: CreateWebhookDto,
  ) {
    return this.webhooks.create(principal, teamId, body);
  }

  @Get()
  list(
    @CurrentPrincipal() principal: Principal,
    @Param('teamId', new UuidParam('team')) teamId: string,
  ): Promise<WebhookView[]> {
    return this.webhooks.list(principal, teamId);
  }

  @Delete(':id')
  remove(
    @CurrentPrincipal() principal: Principal,
    @Param('teamId', new UuidParam('team')) teamId: string,
    @Param('id', new UuidParam('webhook')) id: string,
  ) {
    return this.webhooks.remove(principal, teamId, id);
  }

  @Get(':id/deliveries')
  deliveries(
    @CurrentPrincipal() principal: Principal,
    @Param('teamId', new UuidParam('team')) teamId: string,
    @Param('id', new UuidParam('webhook')) id: string,
  ): Promise<WebhookDeliveryView[]> {
    return this.webhooks.deliveries(principal, teamId, id);
  }
}
