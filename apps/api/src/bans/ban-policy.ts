import { HttpStatus, Injectable } from '@nestjs/common';
import { BenchmarkRegistry } from '../benchmarks/benchmark-registry';
import { Clock } from '../common/clock';
import { AppError } from '../common/errors';
import type { BanEntity } from './ban.entity';
import { BansRepository } from './bans.repository';

/**
 * The gate every write of a participant goes through (upload, run, team creation and joining):
 * a ban in force refuses it with 403 `banned`, naming the reason and the end. Reading stays open.
 * A leaf: it calls no other domain, so uploads, runs and teams can all ask it.
 */
@Injectable()
export class BanPolicy {
  constructor(
    private readonly bans: BansRepository,
    private readonly registry: BenchmarkRegistry,
    private readonly clock: Clock,
  ) {}

  /** A user acting for a team on a benchmark: refused when either is banned there or hub-wide. */
  async assertCanAct(
    who: { userId: string; teamId: string; benchmarkId: string },
    what: string,
  ): Promise<void> {
    const [ban] = await this.bans.active({
      userId: who.userId,
      teamIds: [who.teamId],
      benchmarkId: who.benchmarkId,
      now: this.clock.now(),
    });
    if (ban) throw this.refusal(ban, who.userId, what);
  }

  /** Founding or joining a team: refused while the user, or any team of theirs, is banned anywhere. */
  async assertCanJoinTeams(userId: string, what: string): Promise<void> {
    const [ban] = await this.bans.active({
      userId,
      teamIds: await this.bans.teamIdsOf(userId),
      now: this.clock.now(),
    });
    if (ban) throw this.refusal(ban, userId, what);
  }

  /** The bans in force on a user and the given teams (what a participant sees about themselves). */
  async inForce(userId: string, teamIds: string[]): Promise<BanEntity[]> {
    return this.bans.active({ userId, teamIds, now: this.clock.now() });
  }

  private refusal(ban: BanEntity, userId: string, what: string): AppError {
    const who = ban.userId === userId ? 'You are' : 'Your team is';
    const scope = ban.benchmarkId
      ? (this.registry.get(ban.benchmarkId)?.title ?? ban.benchmarkId)
      : 'every benchmark on this hub';
    const until = ban.endsAt ? `until ${ban.endsAt.toISOString()}` : 'until an organizer lifts the ban';
    return new AppError(
      HttpStatus.FORBIDDEN,
      'banned',
      `${who} banned from ${scope} ${until}, so you cannot ${what}. Reason: ${ban.reason}. You can still read your results.`,
      {
        subject: ban.userId ? 'user' : 'team',
        benchmarkId: ban.benchmarkId,
        reason: ban.reason,
        endsAt: ban.endsAt?.toISOString() ?? null,
      },
    );
  }
}
