import type { ThrottlerStorage } from '@nestjs/throttler';
import type { createClient } from 'redis';
import { closeRedisClient } from '../common/redis-shutdown';

/**
 * A lockout that grows: the first block of a key lasts `blockDuration`, each further one within
 * `memoryMs` of the last lasts twice the one before, up to `maxMs`.
 */
export interface Growth {
  maxMs: number;
  memoryMs: number;
}

/** What one counted request found (the @nestjs/throttler record, with when its block began). */
export interface RateRecord {
  totalHits: number;
  /** Seconds until the window's count starts again. */
  timeToExpire: number;
  isBlocked: boolean;
  /** Seconds until the block ends (0 when not blocked). */
  timeToBlockExpire: number;
  /** This very request began the block (the one to audit); false for those refused after it. */
  blockStarted: boolean;
  /** How many blocks this key has had within the growth memory, this one included (0 unblocked). */
  strikes: number;
}

/**
 * The storage of every rate limit: a fixed window of `ttl` ms that admits `limit` requests; the
 * request past them begins a block of `blockDuration` ms (growing for the names in `growth`), during
 * which every request of the key is refused without being counted; when the block ends the count
 * starts again from zero. `peek` reads a block without counting.
 */
export interface RateLimitStorage extends ThrottlerStorage {
  increment(
    key: string,
    ttl: number,
    limit: number,
    blockDuration: number,
    name: string,
  ): Promise<RateRecord>;
  /** Seconds left of the key's block, 0 when it is not blocked. */
  blockedFor(key: string, name: string): Promise<number>;
  close(): Promise<void>;
}

const seconds = (ms: number) => Math.max(1, Math.ceil(ms / 1000));

interface MemoryEntry {
  hits: number;
  windowEnds: number;
  blockedUntil: number;
  strikes: number;
  strikesForgottenAt: number;
}

/** One process's limits, in a Map (one replica, or the public reads that each replica counts itself). */
export class MemoryRateLimitStorage implements RateLimitStorage {
  private readonly entries = new Map<string, MemoryEntry>();
  private readonly sweep: NodeJS.Timeout;

  constructor(
    private readonly growth: Record<string, Growth> = {},
    private readonly now: () => number = Date.now,
  ) {
    // Forget idle keys once a minute, so a flood of distinct IPs cannot grow the map for good.
    this.sweep = setInterval(() => this.forgetIdle(), 60_000);
    this.sweep.unref();
  }

  increment(
    key: string,
    ttl: number,
    limit: number,
    blockDuration: number,
    name: string,
  ): Promise<RateRecord> {
    return Promise.resolve(this.incrementNow(key, ttl, limit, blockDuration, name));
  }

  /** The same as `increment`, without a promise (the public-read check runs before Express). */
  incrementNow(key: string, ttl: number, limit: number, blockDuration: number, name: string): RateRecord {
    const now = this.now();
    const k = `${name}:${key}`;
    let e = this.entries.get(k);
    if (!e) {
      e = { hits: 0, windowEnds: now + ttl, blockedUntil: 0, strikes: 0, strikesForgottenAt: 0 };
      this.entries.set(k, e);
    }
    if (e.blockedUntil > now)
      return {
        totalHits: e.hits,
        timeToExpire: seconds(e.blockedUntil - now),
        isBlocked: true,
        timeToBlockExpire: seconds(e.blockedUntil - now),
        blockStarted: false,
        strikes: e.strikes,
      };
    if (e.windowEnds <= now) {
      e.hits = 0;
      e.windowEnds = now + ttl;
    }
    e.hits++;
    if (e.hits <= limit)
      return {
        totalHits: e.hits,
        timeToExpire: seconds(e.windowEnds - now),
        isBlocked: false,
        timeToBlockExpire: 0,
        blockStarted: false,
        strikes: 0,
      };
    const growth = this.growth[name];
    let block = blockDuration;
    if (growth) {
      if (e.strikesForgottenAt <= now) e.strikes = 0;
      e.strikes++;
      e.strikesForgottenAt = now + growth.memoryMs;
      block = Math.min(blockDuration * 2 ** (e.strikes - 1), growth.maxMs);
    } else e.strikes = 1;
    const hits = e.hits;
    e.blockedUntil = now + block;
    e.hits = 0;
    e.windowEnds = e.blockedUntil;
    return {
      totalHits: hits,
      timeToExpire: seconds(block),
      isBlocked: true,
      timeToBlockExpire: seconds(block),
      blockStarted: true,
      strikes: e.strikes,
    };
  }

  blockedFor(key: string, name: string): Promise<number> {
    const e = this.entries.get(`${name}:${key}`);
    const left = e ? e.blockedUntil - this.now() : 0;
    return Promise.resolve(left > 0 ? seconds(left) : 0);
  }

  private forgetIdle(): void {
    const now = this.now();
    for (const [k, e] of this.entries)
      if (e.windowEnds <= now && e.blockedUntil <= now && e.strikesForgottenAt <= now) this.entries.delete(k);
  }

  close(): Promise<void> {
    clearInterval(this.sweep);
    this.entries.clear();
    return Promise.resolve();
  }
}

/**
 * KEYS: the window's count, the block, the strikes. ARGV: ttl ms, limit, block ms, grows (0/1),
 * longest block ms, strike memory ms. Returns {hits, ms to window end, blocked, ms of block left,
 * began now, strikes}. Atomic in Redis, so replicas share one count and exactly one request begins
 * a block.
 */
const INCREMENT = `
local blockLeft = redis.call('PTTL', KEYS[2])
if blockLeft > 0 then
  local strikes = tonumber(redis.call('GET', KEYS[3]) or '1')
  return {0, blockLeft, 1, blockLeft, 0, strikes}
end
local hits = redis.call('INCR', KEYS[1])
if hits == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
local windowLeft = redis.call('PTTL', KEYS[1])
if windowLeft < 0 then
  redis.call('PEXPIRE', KEYS[1], ARGV[1])
  windowLeft = tonumber(ARGV[1])
end
if hits <= tonumber(ARGV[2]) then return {hits, windowLeft, 0, 0, 0, 0} end
local block = tonumber(ARGV[3])
local strikes = 1
if ARGV[4] == '1' then
  strikes = redis.call('INCR', KEYS[3])
  redis.call('PEXPIRE', KEYS[3], ARGV[6])
  block = math.min(block * 2 ^ (strikes - 1), tonumber(ARGV[5]))
else
  redis.call('SET', KEYS[3], '1', 'PX', math.max(block, 1))
end
block = math.max(math.floor(block), 1)
redis.call('SET', KEYS[2], '1', 'PX', block)
redis.call('DEL', KEYS[1])
return {hits, block, 1, block, 1, strikes}
`;

type Redis = ReturnType<typeof createClient>;

/**
 * Every replica's limits in one Redis (REDIS_URL), under `prefix` (the hub's REDIS_STREAM), so an
 * attacker gets the same count whichever replica answers. A Redis that cannot be reached lets the
 * request through (said once per 10 s by `onError`): a lost Redis must not stop the hub.
 */
export class RedisRateLimitStorage implements RateLimitStorage {
  private lastError = 0;

  constructor(
    private readonly redis: Redis,
    private readonly prefix: string,
    private readonly growth: Record<string, Growth> = {},
    private readonly onError: (message: string) => void = () => undefined,
  ) {}

  private keys(key: string, name: string): [string, string, string] {
    const base = `${this.prefix}:rate:${name}:${key}`;
    return [`${base}:hits`, `${base}:block`, `${base}:strikes`];
  }

  async increment(
    key: string,
    ttl: number,
    limit: number,
    blockDuration: number,
    name: string,
  ): Promise<RateRecord> {
    const growth = this.growth[name];
    try {
      const reply = (await this.redis.eval(INCREMENT, {
        keys: this.keys(key, name),
        arguments: [
          String(Math.max(1, Math.round(ttl))),
          String(limit),
          String(Math.max(1, Math.round(blockDuration))),
          growth ? '1' : '0',
          String(growth?.maxMs ?? blockDuration),
          String(growth?.memoryMs ?? blockDuration),
        ],
      })) as number[];
      const [hits, windowLeft, blocked, blockLeft, began, strikes] = reply.map(Number);
      return {
        totalHits: hits,
        timeToExpire: seconds(windowLeft),
        isBlocked: blocked === 1,
        timeToBlockExpire: blocked === 1 ? seconds(blockLeft) : 0,
        blockStarted: began === 1,
        strikes,
      };
    } catch (err) {
      this.failed(err);
      return {
        totalHits: 0,
        timeToExpire: seconds(ttl),
        isBlocked: false,
        timeToBlockExpire: 0,
        blockStarted: false,
        strikes: 0,
      };
    }
  }

  async blockedFor(key: string, name: string): Promise<number> {
    try {
      const left = await this.redis.pTTL(this.keys(key, name)[1]);
      return left > 0 ? seconds(left) : 0;
    } catch (err) {
      this.failed(err);
      return 0;
    }
  }

  private failed(err: unknown): void {
    if (Date.now() - this.lastError < 10_000) return;
    this.lastError = Date.now();
    this.onError(
      `rate limits: Redis unreachable (${(err as Error).message}); requests are let through meanwhile`,
    );
  }

  async close(): Promise<void> {
    await closeRedisClient(this.redis);
  }
}
