import { describe, expect, it } from 'vitest';
import type { BenchmarkClockView, FinalBoardPublishedNotice, RoundClosingNotice } from '@dryft/libs';
import {
  closingNoticesFromClock,
  minutesWords,
  noticeKey,
  noticeNotification,
  noticeText,
  utcTime,
} from './notices';

const closing = (over: Partial<RoundClosingNotice> = {}): RoundClosingNotice => ({
  kind: 'round.closing',
  benchmarkId: 'toy-decode',
  benchmarkTitle: 'Toy decode',
  scheduleId: 's1',
  target: 'both',
  closesAt: '2026-12-02T14:00:00.000Z',
  minutesLeft: 60,
  sentAt: '2026-12-02T13:00:00.000Z',
  ...over,
});
const final: FinalBoardPublishedNotice = {
  kind: 'final_board.published',
  benchmarkId: 'toy-decode',
  benchmarkTitle: 'Toy decode',
  publishedAt: '2026-12-02T15:00:00.000Z',
  url: 'https://dryft.example/leaderboard/toy-decode?board=final',
  sentAt: '2026-12-02T15:00:00.000Z',
};
const at = (iso: string) => new Date(iso).getTime();

describe('benchmark notice banners', () => {
  it('counts a closing round down and says what the close refuses', () => {
    expect(noticeText(closing(), at('2026-12-02T13:02:00Z'))).toBe(
      'Round closes in 58 min: official runs started after 14:00 UTC are refused (public runs and uploads too).',
    );
    expect(noticeText(closing({ target: 'evaluations' }), at('2026-12-02T13:59:30Z'))).toBe(
      'Round closes in less than a minute: official runs started after 14:00 UTC are refused (public runs too).',
    );
    expect(noticeText(closing({ target: 'submissions' }), at('2026-12-02T11:55:00Z'), true)).toBe(
      'Toy decode: Round closes in 2 h 5 min: uploads after 14:00 UTC are refused; runs of earlier submissions still start.',
    );
    // Past the close the banner goes (the round clock says closed).
    expect(noticeText(closing(), at('2026-12-02T14:00:00Z'))).toBeNull();
  });

  it('says the final board is published', () => {
    expect(noticeText(final, at('2026-12-02T15:00:00Z'))).toBe('The final board is published.');
    expect(noticeText(final, 0, true)).toBe('Toy decode: The final board is published.');
    expect(noticeNotification(final, 0).title).toBe('Toy decode: the final board is published');
  });

  it('writes minutes, times and notifications', () => {
    expect(minutesWords(59_001)).toBe('less than a minute');
    expect(minutesWords(60_000)).toBe('1 min');
    // Rounded down, like the countdown beside it.
    expect(minutesWords(10 * 60_000 + 26_000)).toBe('10 min');
    expect(minutesWords(120 * 60_000)).toBe('2 h');
    expect(utcTime('2026-12-03T09:05:00Z', at('2026-12-02T23:30:00Z'))).toBe('Dec 3, 09:05 UTC');
    expect(noticeNotification(closing(), at('2026-12-02T13:02:00Z'))).toEqual({
      title: 'Toy decode: round closes in 58 min',
      body: 'Official runs started after 14:00 UTC are refused (public runs and uploads too).',
    });
  });

  it('reads the closes already announced from the clock, once per close and time', () => {
    const clock: BenchmarkClockView = {
      benchmarkId: 'toy-decode',
      round: null,
      submissionsOpen: true,
      evaluationsOpen: true,
      serverTime: '2026-12-02T13:10:00.000Z',
      scheduled: [
        {
          id: 's1',
          benchmarkId: 'toy-decode',
          action: 'close',
          target: 'both',
          at: '2026-12-02T14:00:00.000Z',
          reason: null,
          createdBy: 'org',
          status: 'pending',
          finishedAt: null,
          outcome: null,
          noticeSentAt: '2026-12-02T13:00:00.000Z',
        },
        {
          id: 's2',
          benchmarkId: 'toy-decode',
          action: 'close',
          target: 'both',
          at: '2026-12-03T14:00:00.000Z',
          reason: null,
          createdBy: 'org',
          status: 'pending',
          finishedAt: null,
          outcome: null,
          noticeSentAt: null,
        },
        {
          id: 's3',
          benchmarkId: 'toy-decode',
          action: 'open',
          target: 'both',
          at: '2026-12-02T13:30:00.000Z',
          reason: null,
          createdBy: 'org',
          status: 'pending',
          finishedAt: null,
          outcome: null,
          noticeSentAt: null,
        },
      ],
    };
    const [only, ...rest] = closingNoticesFromClock(clock, 'Toy decode');
    expect(rest).toEqual([]);
    expect(only).toEqual(closing({ minutesLeft: 50 }));
    expect(noticeKey(only)).toBe(noticeKey(closing()));
    expect(noticeKey(closing({ closesAt: '2026-12-02T14:30:00.000Z' }))).not.toBe(noticeKey(closing()));
  });
});
