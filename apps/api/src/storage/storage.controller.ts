import { Controller, Get, UseGuards } from '@nestjs/common';
import type { StorageView } from '@dryft/libs';
import { AdminGuard } from '../common/admin.guard';
import { StorageService } from './storage.service';

@Controller()
export class StorageController {
  constructor(private readonly storage: StorageService) {}

  /** What each team stores and its use against the quotas (organizers only). */
  @UseGuards(AdminGuard)
  @Get('api/admin/storage')
  view(): Promise<StorageView> {
    return this.storage.view();
  }
}
