import { describe, expect, it, vi } from 'vitest';
import type { ExportRow } from '@dryft/libs';
import { BanPolicy } from '../src/bans/ban-policy';
import type { BanEntity } from '../src/bans/ban.entity';
import type { BansRepository } from '../src/bans/bans.repository';
import { BenchmarkRegistry } from '../src/benchmarks/benchmark-registry';
import { Clock } from '../src/common/clock';
import { AppError } from '../src/common/errors';
import { toCsv } from '../src/organizer/organizer.service';
import { signBody } from '../src/notifications/webhooks.service';

const row = (over: Partial<ExportRow> = {}): ExportRow => ({
  rank: 1,
  team: 'Fast, "Qwen"',
  teamSlug: 'fast-qwen',
  members: ['ann', 'bob'],
  submittedBy: 'ann',
  score: 151.5,
  runId: 'r1',
  submissionId: 's1',
  submissionSha256: 'ab'.repeat(32),
  rulesVersion: 2,
  tier: null,
  finishedAt: '2026-11-30T12:00:00.000Z',
  disqualified: false,
  disqualifiedReason: null,
  ...over,
});

describe('results export as CSV', () => {
  it('quotes commas, quotes and line breaks, joins members, and leaves empty cells for null', () => {
    const csv = toCsv([
      row(),
      row({ rank: null, disqualified: true, disqualifiedReason: 'line one\nline two' }),
    ]);
    const lines = csv.split('\r\n');
    expect(lines[0]).toBe(
      'rank,team,teamSlug,members,submittedBy,score,runId,submissionId,submissionSha256,rulesVersion,tier,finishedAt,disqualified,disqualifiedReason',
    );
    expect(lines[1]).toBe(
      `1,"Fast, ""Qwen""",fast-qwen,ann;bob,ann,151.5,r1,s1,${'ab'.repeat(32)},2,,2026-11-30T12:00:00.000Z,false,`,
    );
    expect(csv).toContain(',true,"line one\nline two"\r\n');
    expect(csv.endsWith('\r\n')).toBe(true);
  });

  it('adds the interval columns when the rows carry them', () => {
    const csv = toCsv([row({ intervalLow: 140, intervalHigh: 160 })]);
    expect(csv.split('\r\n')[0]).toContain('score,intervalLow,intervalHigh,runId');
    expect(csv.split('\r\n')[1]).toContain(',151.5,140,160,r1,');
  });
});

describe('the ban policy', () => {
  const registry = new BenchmarkRegistry([]);
  const ban = (over: Partial<BanEntity>): BanEntity =>
    ({
      id: 'b1',
      userId: null,
      teamId: 't1',
      benchmarkId: null,
      reason: 'exploited the recorder',
      endsAt: null,
      ...over,
    }) as BanEntity;
  const policy = (found: BanEntity[]) => {
    const repo = { active: vi.fn(async () => found), teamIdsOf: vi.fn(async () => ['t1', 't2']) };
    return { repo, policy: new BanPolicy(repo as unknown as BansRepository, registry, new Clock()) };
  };

  it('lets an unbanned participant act, asking for the user and the team on that benchmark', async () => {
    const { repo, policy: p } = policy([]);
    await expect(
      p.assertCanAct({ userId: 'u1', teamId: 't1', benchmarkId: 'toy' }, 'upload'),
    ).resolves.toBeUndefined();
    expect(repo.active).toHaveBeenCalledWith(
      expect.objectContaining({ userId: 'u1', teamIds: ['t1'], benchmarkId: 'toy' }),
    );
  });

  it('refuses with 403 banned, naming who, where, until when and why', async () => {
    const { policy: p } = policy([ban({ endsAt: new Date('2026-12-24T00:00:00Z') })]);
    const err = (await p
      .assertCanAct({ userId: 'u1', teamId: 't1', benchmarkId: 'toy' }, 'start runs')
      .catch((e) => e)) as AppError;
    expect(err).toBeInstanceOf(AppError);
    expect([err.status, err.code]).toEqual([403, 'banned']);
    expect(err.message).toBe(
      'Your team is banned from every benchmark on this hub until 2026-12-24T00:00:00.000Z, so you cannot start runs. Reason: exploited the recorder. You can still read your results.',
    );
    const { policy: mine } = policy([ban({ teamId: null, userId: 'u1', benchmarkId: 'toy' })]);
    const own = (await mine.assertCanJoinTeams('u1', 'join a team').catch((e) => e)) as AppError;
    expect(own.message).toMatch(
      /^You are banned from toy until an organizer lifts the ban, so you cannot join a team\./,
    );
  });
});

describe('webhook signatures', () => {
  it("match GitHub's X-Hub-Signature-256 example", () => {
    // https://docs.github.com/en/webhooks/using-webhooks/validating-webhook-deliveries#testing-the-webhook-payload-validation
    expect(signBody("It's a Secret to Everybody", 'Hello, World!')).toBe(
      'sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17',
    );
  });
});
