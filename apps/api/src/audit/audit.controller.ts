import { Controller, Get, Query, UseGuards } from '@nestjs/common';
import { AuditAction, type AuditEntryView } from '@dryft/libs';
import { AdminGuard } from '../common/admin.guard';
import { parseLimit } from '../common/cursor';
import { badRequest } from '../common/errors';
import { AuditService } from './audit.service';

/** The audit log, readable by organizers. There is deliberately no route that changes it. */
@Controller()
@UseGuards(AdminGuard)
export class AuditController {
  constructor(private readonly audit: AuditService) {}

  @Get('api/admin/audit')
  list(
    @Query('benchmark') benchmarkId?: string,
    @Query('action') action?: string,
    @Query('target') targetId?: string,
    @Query('cursor') cursor?: string,
    @Query('limit') limit?: string,
  ): Promise<{ items: AuditEntryView[]; nextCursor: string | null }> {
    if (action !== undefined && !AuditAction.safeParse(action).success)
      throw badRequest('invalid_action', `action must be one of: ${AuditAction.options.join(', ')}.`);
    return this.audit.list({ benchmarkId, action, targetId, cursor, limit: parseLimit(limit, 50, 200) });
  }
}
