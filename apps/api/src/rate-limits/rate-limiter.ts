import { HttpStatus, Inject, Injectable, Logger, OnApplicationShutdown } from '@nestjs/common';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { AuditService } from '../audit/audit.service';
import { AppError } from '../common/errors';
import type { Principal } from '../common/principal';
import { CONFIG, Config, RateSetting } from '../config/config';
import { clientIp, trustedProxies } from './client-ip';
import { MemoryRateLimitStorage, RateLimitStorage, RateRecord } from './rate-limit-storage';

export const RATE_LIMIT_STORAGE = Symbol('RATE_LIMIT_STORAGE');

/** The limits a route can take (`@RateLimit(…)`), counted by the @nestjs/throttler guard. */
export const ROUTE_LIMITS = ['join', 'signin', 'uploads', 'runs', 'create'] as const;
export type RouteLimit = (typeof ROUTE_LIMITS)[number];
/** The limits counted outside a route guard: failed token authentication, socket handshakes, public reads. */
export type LimitName = RouteLimit | 'auth_failures' | 'socket' | 'public';

const WHAT: Record<LimitName, string> = {
  join: 'attempts to join a team by invite code',
  signin: 'sign-ins from this address',
  uploads: 'uploads',
  runs: 'runs started',
  create: 'teams and API tokens created',
  auth_failures: 'requests from this address whose API token was refused',
  socket: 'connection attempts from this address',
  public: 'reads from this address',
};

const SETTING: Record<LimitName, keyof Config> = {
  join: 'RATE_LIMIT_JOIN',
  signin: 'RATE_LIMIT_SIGNIN',
  uploads: 'RATE_LIMIT_UPLOADS',
  runs: 'RATE_LIMIT_RUNS',
  create: 'RATE_LIMIT_CREATE',
  auth_failures: 'RATE_LIMIT_AUTH_FAILURES',
  socket: 'RATE_LIMIT_SOCKET',
  public: 'RATE_LIMIT_PUBLIC',
};

export interface LimitSettings {
  limit: number;
  ttlMs: number;
  /** The first block; for `join` it grows (RATE_LIMIT_JOIN_LOCKOUT_*), for the others it is the window. */
  blockMs: number;
}

export function limitSettings(config: Config, name: LimitName): LimitSettings {
  const s = config[SETTING[name]] as RateSetting;
  const ttlMs = s.seconds * 1000;
  return {
    limit: s.limit,
    ttlMs,
    blockMs: name === 'join' ? config.RATE_LIMIT_JOIN_LOCKOUT_SECONDS * 1000 : ttlMs,
  };
}

/** The growing lockout of `join`, for the storages. */
export function growthOf(config: Config) {
  return {
    join: { maxMs: config.RATE_LIMIT_JOIN_LOCKOUT_MAX_SECONDS * 1000, memoryMs: 24 * 3600 * 1000 },
  };
}

const period = (seconds: number) =>
  seconds === 60
    ? 'a minute'
    : seconds === 3600
      ? 'an hour'
      : seconds % 3600 === 0
        ? `every ${seconds / 3600} hours`
        : seconds % 60 === 0
          ? `every ${seconds / 60} minutes`
          : `every ${seconds} s`;

const duration = (s: number) =>
  s < 120 ? `${s} s` : s < 7200 ? `${Math.ceil(s / 60)} min` : `${Math.round((s / 3600) * 10) / 10} h`;

/** Who a limit counts: the team API token, else the signed-in user, else the caller's address. */
export function trackerOf(principal: Principal | null | undefined, ip: string): string {
  if (principal?.via === 'token' && principal.tokenId) return `token:${principal.tokenId}`;
  if (principal) return `user:${principal.user.id}`;
  return `ip:${ip}`;
}

/**
 * Every rate limit of the hub, over one storage (Redis when REDIS_URL is set, so every replica
 * shares each count; memory otherwise). Public reads are counted by each replica in memory, with no
 * round trip: they are the hub's hottest path and their limit is generous. A refusal is a 429
 * `rate_limited` with `Retry-After` and words that say when to retry.
 */
@Injectable()
export class RateLimiter implements OnApplicationShutdown {
  private readonly logger = new Logger('RateLimits');
  private readonly publicReads: MemoryRateLimitStorage;
  private readonly publicSettings: LimitSettings;
  /** TRUST_PROXY (validated at boot): whose X-Forwarded-For names the client. */
  private readonly trustedProxy: (ip: string) => boolean;
  /** A keep-alive connection's public-read bucket key (its address does not change). */
  private readonly connectionKeys = new WeakMap<object, string>();

  constructor(
    @Inject(RATE_LIMIT_STORAGE) private readonly storage: RateLimitStorage,
    @Inject(CONFIG) private readonly config: Config,
    private readonly audit: AuditService,
  ) {
    this.publicReads = new MemoryRateLimitStorage();
    this.publicSettings = limitSettings(config, 'public');
    const proxies = trustedProxies(config.TRUST_PROXY ?? 'loopback');
    if ('problem' in proxies) throw new Error(`TRUST_PROXY: ${proxies.problem}`);
    this.trustedProxy = proxies.trusted;
  }

  settings(name: LimitName): LimitSettings {
    return limitSettings(this.config, name);
  }

  async hit(name: LimitName, tracker: string): Promise<RateRecord> {
    const s = this.settings(name);
    return this.storage.increment(tracker, s.ttlMs, s.limit, s.blockMs, name);
  }

  /** The 429 for a refused request; `Retry-After` goes on `res` when there is one. */
  refusal(
    name: LimitName,
    record: RateRecord,
    res?: { setHeader(name: string, value: string): unknown },
  ): AppError {
    const s = this.settings(name);
    const wait = Math.max(1, record.timeToBlockExpire);
    const at = new Date(Date.now() + wait * 1000);
    const when = `${at.toISOString().slice(11, 19)} UTC`;
    res?.setHeader('Retry-After', String(wait));
    const rule = `at most ${s.limit} ${period(s.ttlMs / 1000)}`;
    const message =
      name === 'join'
        ? `Too many ${WHAT.join} (${rule}): locked out for ${duration(wait)}, until ${when}, for every code, a correct one too. Check the code with the team's owner before trying again; each further lockout within a day lasts twice as long, up to ${duration(this.config.RATE_LIMIT_JOIN_LOCKOUT_MAX_SECONDS)}.`
        : `Too many ${WHAT[name]} (${rule}). Try again in ${duration(wait)}, after ${when}.`;
    // The wait rides on the error too, so the error filter sets Retry-After wherever it is thrown.
    return new AppError(
      HttpStatus.TOO_MANY_REQUESTS,
      'rate_limited',
      message,
      { limit: name, retryAfterSeconds: wait, retryAt: at.toISOString() },
      wait,
    );
  }

  /**
   * A join lockout began: an audit entry (`team.join_locked`) the organizers see, with the user,
   * the address and how long, so a guessing account can be banned.
   */
  async joinLocked(principal: Principal, record: RateRecord, ip: string): Promise<void> {
    const s = this.settings('join');
    try {
      await this.audit.record(principal, {
        action: 'team.join_locked',
        target: { kind: 'user', id: principal.user.id },
        reason: `More than ${s.limit} attempts to join a team by invite code within ${s.ttlMs / 1000} s`,
        details: {
          login: principal.user.login,
          ip,
          via: principal.via,
          attempts: record.totalHits,
          lockedSeconds: record.timeToBlockExpire,
          lockout: record.strikes,
        },
      });
    } catch (err) {
      this.logger.error(
        `could not audit a join lockout of ${principal.user.login}: ${(err as Error).message}`,
      );
    }
  }

  /** Before a request's API token is checked: refused while its address is blocked for failed tokens. */
  async assertTokensAllowed(ip: string, res?: ServerResponse | { setHeader(n: string, v: string): unknown }) {
    const left = await this.storage.blockedFor(`ip:${ip}`, 'auth_failures');
    if (left > 0) throw this.refusal('auth_failures', this.blockedRecord(left), res);
  }

  /** A request's API token was refused: counted; the one past the limit blocks the address. */
  async tokenFailed(ip: string, res?: { setHeader(n: string, v: string): unknown }): Promise<void> {
    const record = await this.hit('auth_failures', `ip:${ip}`);
    if (record.isBlocked) {
      if (record.blockStarted)
        this.logger.warn(
          `${ip}: more than ${this.settings('auth_failures').limit} refused API tokens; blocked`,
        );
      throw this.refusal('auth_failures', record, res);
    }
  }

  /** A `/live` or `/agents` handshake: refused (at the handshake, before any credential is checked) past the limit. */
  async socketAttempt(namespace: 'live' | 'agents', handshake: SocketHandshake): Promise<void> {
    const ip = clientIp(handshake.address, handshake.headers['x-forwarded-for'], this.trustedProxy);
    const record = await this.hit('socket', `${namespace}:ip:${ip}`);
    if (record.isBlocked) {
      const err = this.refusal('socket', record);
      throw new AppError(
        err.status,
        err.code,
        err.message.replace('connection attempts', `connection attempts to /${namespace}`),
        err.details,
      );
    }
  }

  /**
   * Reads without credentials (GET/HEAD under /api/, not health), before Express: true when the
   * request was answered with a 429 here.
   */
  refusePublicRead(req: IncomingMessage, res: ServerResponse): boolean {
    if (req.method !== 'GET' && req.method !== 'HEAD') return false;
    const url = req.url ?? '';
    if (!url.startsWith('/api/') || url.startsWith('/api/health')) return false;
    if (req.headers.authorization || req.headers.cookie?.includes('dryft_session=')) return false;
    const s = this.publicSettings;
    const record = this.publicReads.incrementNow(
      this.publicReadKey(req),
      s.ttlMs,
      s.limit,
      s.blockMs,
      'public',
    );
    if (!record.isBlocked) return false;
    const err = this.refusal('public', record, res);
    res.statusCode = 429;
    res.setHeader('Content-Type', 'application/json; charset=utf-8');
    res.end(JSON.stringify({ error: { code: err.code, message: err.message, details: err.details } }));
    return true;
  }

  /**
   * The public-read bucket of a request's client. Without X-Forwarded-For that is the connection's
   * address, worked out once per keep-alive connection: this runs before every public read, and
   * parsing the same address again cost as much as serving the read (bench/RESULTS.md).
   */
  private publicReadKey(req: IncomingMessage): string {
    const forwardedFor = req.headers['x-forwarded-for'];
    if (forwardedFor) return `ip:${clientIp(req.socket.remoteAddress, forwardedFor, this.trustedProxy)}`;
    let key = this.connectionKeys.get(req.socket);
    if (key === undefined) {
      key = `ip:${clientIp(req.socket.remoteAddress, undefined, this.trustedProxy)}`;
      this.connectionKeys.set(req.socket, key);
    }
    return key;
  }

  private blockedRecord(seconds: number): RateRecord {
    return {
      totalHits: 0,
      timeToExpire: seconds,
      isBlocked: true,
      timeToBlockExpire: seconds,
      blockStarted: false,
      strikes: 0,
    };
  }

  async onApplicationShutdown(): Promise<void> {
    await this.publicReads.close();
    await this.storage.close();
  }
}

export interface SocketHandshake {
  address: string;
  headers: Record<string, string | string[] | undefined>;
}
