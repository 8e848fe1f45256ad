import { Global, Logger, Module } from '@nestjs/common';
import { ThrottlerModule } from '@nestjs/throttler';
import { createClient } from 'redis';
import { CONFIG, Config } from '../config/config';
import { MemoryRateLimitStorage, RateLimitStorage, RedisRateLimitStorage } from './rate-limit-storage';
import { routeLimits, RateLimitGuard } from './rate-limit.guard';
import { growthOf, limitSettings, RATE_LIMIT_STORAGE, RateLimiter, ROUTE_LIMITS } from './rate-limiter';

/** Redis (its own connection, commands refused at once while it is away) with REDIS_URL; memory otherwise. */
async function openStorage(config: Config): Promise<RateLimitStorage> {
  const logger = new Logger('RateLimits');
  if (!config.REDIS_URL) return new MemoryRateLimitStorage(growthOf(config));
  const client = createClient({ url: config.REDIS_URL, disableOfflineQueue: true });
  client.on('error', (err) => logger.debug(`redis: ${(err as Error).message}`));
  await client.connect();
  return new RedisRateLimitStorage(client, config.REDIS_STREAM, growthOf(config), (m) => logger.warn(m));
}

@Global()
@Module({
  providers: [{ provide: RATE_LIMIT_STORAGE, useFactory: openStorage, inject: [CONFIG] }],
  exports: [RATE_LIMIT_STORAGE],
})
class RateLimitStorageModule {}

/**
 * Rate limits: @nestjs/throttler's module with one throttler per route limit (each route names the
 * limits it counts against, `@RateLimit`), over the storage above; `RateLimiter` for the limits
 * counted outside a route (failed tokens, socket handshakes, public reads).
 */
@Global()
@Module({
  imports: [
    RateLimitStorageModule,
    ThrottlerModule.forRootAsync({
      imports: [RateLimitStorageModule],
      inject: [CONFIG, RATE_LIMIT_STORAGE],
      useFactory: (config: Config, storage: RateLimitStorage) => ({
        storage,
        throttlers: ROUTE_LIMITS.map((name) => {
          const s = limitSettings(config, name);
          return {
            name,
            limit: s.limit,
            ttl: s.ttlMs,
            blockDuration: s.blockMs,
            skipIf: (context) => !routeLimits(context).includes(name),
          };
        }),
      }),
    }),
  ],
  providers: [RateLimiter, RateLimitGuard],
  exports: [RateLimiter, RateLimitGuard, ThrottlerModule],
})
export class RateLimitsModule {}
