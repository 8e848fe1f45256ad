import { Global, Module } from '@nestjs/common';
import { BanPolicy } from './ban-policy';
import { BansRepository } from './bans.repository';

/** Global so that uploads, runs and teams can all check bans without importing the bans domain. */
@Global()
@Module({
  providers: [BanPolicy, BansRepository],
  exports: [BanPolicy, BansRepository],
})
export class BanPolicyModule {}
