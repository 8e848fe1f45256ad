import { Module } from '@nestjs/common';
import { StorageController } from './storage.controller';
import { StorageRepository } from './storage.repository';
import { StorageService } from './storage.service';

/** Organizers' view of each team's stored data against the quotas. */
@Module({
  controllers: [StorageController],
  providers: [StorageService, StorageRepository],
})
export class StorageModule {}
