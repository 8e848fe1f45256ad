import { Module } from '@nestjs/common';
import { BenchmarksModule } from '../benchmarks/benchmarks.module';
import { RoundClockController } from './round-clock.controller';
import { RoundClockRepository } from './round-clock.repository';
import { RoundClockService } from './round-clock.service';

@Module({
  imports: [BenchmarksModule],
  controllers: [RoundClockController],
  providers: [RoundClockService, RoundClockRepository],
})
export class RoundClockModule {}
