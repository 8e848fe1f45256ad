import { Body, Controller, Get, Param, Post, UseGuards } from '@nestjs/common';
import { QuotaGrantBody, type QuotaGrantView } from '@dryft/libs';
import { createZodDto } from 'nestjs-zod';
import { AdminGuard } from '../common/admin.guard';
import { CurrentPrincipal, Principal } from '../common/principal';
import { QuotaGrantsService } from './quota-grants.service';

class QuotaGrantDto extends createZodDto(QuotaGrantBody) {}

@Controller()
@UseGuards(AdminGuard)
export class QuotaGrantsController {
  constructor(private readonly grants: QuotaGrantsService) {}

  @Post('api/admin/benchmarks/:id/quota-grants')
  grant(
    @CurrentPrincipal() principal: Principal,
    @Param('id') benchmarkId: string,
    @Body() body: QuotaGrantDto,
  ): Promise<QuotaGrantView> {
    return this.grants.grant(principal, benchmarkId, body);
  }

  @Get('api/admin/benchmarks/:id/quota-grants')
  list(@Param('id') benchmarkId: string): Promise<QuotaGrantView[]> {
    return this.grants.list(benchmarkId);
  }
}
