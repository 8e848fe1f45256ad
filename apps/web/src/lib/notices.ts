import type { BenchmarkClockView, BenchmarkNotice, RoundClosingNotice } from '@dryft/libs';

/**
 * Benchmark notices as the pages show them (a banner) and as a browser notification says them.
 * Pure, so the wording is testable without a browser. A closing notice counts down from its
 * `closesAt`; the clock's pending closes carry `noticeSentAt`, so a page opened after the notice
 * went out shows it too.
 */

/** The closing notices a clock stands for: its pending closes whose notice went out. */
export function closingNoticesFromClock(
  clock: BenchmarkClockView,
  benchmarkTitle: string,
): RoundClosingNotice[] {
  return clock.scheduled
    .filter((a) => a.action === 'close' && a.status === 'pending' && a.noticeSentAt)
    .map((a) => ({
      kind: 'round.closing',
      benchmarkId: clock.benchmarkId,
      benchmarkTitle,
      scheduleId: a.id,
      target: a.target,
      closesAt: a.at,
      minutesLeft: Math.max(
        0,
        Math.ceil((new Date(a.at).getTime() - new Date(clock.serverTime).getTime()) / 60_000),
      ),
      sentAt: a.noticeSentAt!,
    }));
}

/**
 * "58 min", "2 h 5 min", "less than a minute" until a time `ms` away: whole minutes, rounded down
 * like the round clock's countdown (10:26 left reads "10 min"), so a deadline never reads later.
 */
export function minutesWords(ms: number): string {
  if (ms < 60_000) return 'less than a minute';
  const minutes = Math.floor(ms / 60_000);
  if (minutes < 60) return `${minutes} min`;
  const h = Math.floor(minutes / 60);
  const m = minutes % 60;
  return m ? `${h} h ${m} min` : `${h} h`;
}

/** "14:00 UTC", with the date ("Dec 3, 14:00 UTC") when it is not the same UTC day as `now`. */
export function utcTime(iso: string, now: number): string {
  const d = new Date(iso);
  const hm = `${String(d.getUTCHours()).padStart(2, '0')}:${String(d.getUTCMinutes()).padStart(2, '0')} UTC`;
  if (d.toISOString().slice(0, 10) === new Date(now).toISOString().slice(0, 10)) return hm;
  const month = d.toLocaleString('en', { month: 'short', timeZone: 'UTC' });
  return `${month} ${d.getUTCDate()}, ${hm}`;
}

/** What closing refuses, after the time. */
function refused(target: RoundClosingNotice['target'], at: string): string {
  if (target === 'submissions')
    return `uploads after ${at} are refused; runs of earlier submissions still start.`;
  const too = target === 'both' ? 'public runs and uploads too' : 'public runs too';
  return `official runs started after ${at} are refused (${too}).`;
}

/**
 * The banner's text at `now`; null once a close has passed (the round clock says it is closed).
 * `withBenchmark` names the benchmark (team pages show every benchmark's notices).
 */
export function noticeText(n: BenchmarkNotice, now: number, withBenchmark = false): string | null {
  const prefix = withBenchmark ? `${n.benchmarkTitle}: ` : '';
  if (n.kind === 'final_board.published') return `${prefix}The final board is published.`;
  const left = new Date(n.closesAt).getTime() - now;
  if (left <= 0) return null;
  return `${prefix}Round closes in ${minutesWords(left)}: ${refused(n.target, utcTime(n.closesAt, now))}`;
}

/** The browser notification for a notice (if the user enabled them). */
export function noticeNotification(n: BenchmarkNotice, now: number): { title: string; body: string } {
  if (n.kind === 'final_board.published')
    return {
      title: `${n.benchmarkTitle}: the final board is published`,
      body: 'Open it to see the verified ranking.',
    };
  const left = new Date(n.closesAt).getTime() - now;
  return {
    title: `${n.benchmarkTitle}: round closes in ${minutesWords(Math.max(0, left))}`,
    body: refused(n.target, utcTime(n.closesAt, now)).replace(/^./, (c) => c.toUpperCase()),
  };
}

/** A notice's identity: the same close (at the same time) or the same publication is shown once. */
export function noticeKey(n: BenchmarkNotice): string {
  return n.kind === 'round.closing'
    ? `closing:${n.scheduleId}:${n.closesAt}`
    : `final:${n.benchmarkId}:${n.publishedAt}`;
}
