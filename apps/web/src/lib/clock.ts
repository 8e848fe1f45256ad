/** "2d 03:14:05" until (or since) a time; pure, so the countdown is testable without a browser. */
export function formatCountdown(ms: number): string {
  const total = Math.max(0, Math.floor(Math.abs(ms) / 1000));
  const d = Math.floor(total / 86400);
  const h = Math.floor((total % 86400) / 3600);
  const m = Math.floor((total % 3600) / 60);
  const s = total % 60;
  const hms = [h, m, s].map((n) => String(n).padStart(2, '0')).join(':');
  return d > 0 ? `${d}d ${hms}` : hms;
}

/** Where a round stands at `now`: before it, during it, or after it. */
export function roundPhase(
  round: { startsAt: string; endsAt: string },
  now: number,
): { phase: 'upcoming' | 'running' | 'ended'; ms: number } {
  const start = new Date(round.startsAt).getTime();
  const end = new Date(round.endsAt).getTime();
  if (now < start) return { phase: 'upcoming', ms: start - now };
  if (now < end) return { phase: 'running', ms: end - now };
  return { phase: 'ended', ms: now - end };
}
