export function formatBytes(n: number): string {
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KiB`;
  return `${(n / 1024 / 1024).toFixed(2)} MiB`;
}

export function formatDate(iso: string | null | undefined): string {
  if (!iso) return '—';
  const d = new Date(iso);
  return d.toLocaleString(undefined, {
    year: 'numeric',
    month: 'short',
    day: 'numeric',
    hour: '2-digit',
    minute: '2-digit',
  });
}

export function timeAgo(iso: string | null | undefined, now = Date.now()): string {
  if (!iso) return '—';
  const s = Math.round((now - Date.parse(iso)) / 1000);
  if (s < 5) return 'just now';
  if (s < 60) return `${s} s ago`;
  if (s < 3600) return `${Math.floor(s / 60)} min ago`;
  if (s < 86400) return `${Math.floor(s / 3600)} h ago`;
  return `${Math.floor(s / 86400)} d ago`;
}

export function formatDuration(seconds: number): string {
  if (!Number.isFinite(seconds) || seconds < 0) return '—';
  const s = Math.round(seconds);
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min${s % 60 ? ` ${s % 60} s` : ''}`;
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  return `${h} h${m ? ` ${m} min` : ''}`;
}

export function formatMs(ms: number | null | undefined): string {
  if (ms === null || ms === undefined) return '—';
  return ms < 10 ? `${ms.toFixed(2)} ms` : ms < 1000 ? `${ms.toFixed(1)} ms` : `${(ms / 1000).toFixed(2)} s`;
}

export function formatScore(score: number | null | undefined, unit = 'points'): string {
  if (score === null || score === undefined) return '—';
  return unit === 'accuracy' ? `${score.toFixed(2)}%` : score.toFixed(1);
}

/**
 * "± 2.1": the half-width of a score's 95 % interval, in score points; '' without one. With the
 * score, an interval that is not symmetric around it is shown as it is: "+9.2 −13.5".
 */
export function formatHalfWidth(
  interval: { halfWidth: number; low?: number; high?: number } | null | undefined,
  score?: number | null,
): string {
  if (!interval) return '';
  if (typeof score === 'number' && interval.low !== undefined && interval.high !== undefined) {
    const up = interval.high - score;
    const down = score - interval.low;
    if (Math.abs(up - down) >= 0.05) return `+${up.toFixed(1)} −${down.toFixed(1)}`;
  }
  return `± ${interval.halfWidth.toFixed(1)}`;
}

/** "95 % interval 98.5–104.5 · 7 pairs": the secondary text under an official decode score. */
export function formatInterval(
  interval: { low: number; high: number; level: number } | null | undefined,
  pairs?: number | null,
): string {
  if (!interval) return '';
  const level = Math.round(interval.level * 100);
  const text = `${level} % interval ${interval.low.toFixed(1)}–${interval.high.toFixed(1)}`;
  return pairs ? `${text} · ${pairs} pairs` : text;
}

export function formatTimestamp(ts: number): string {
  const d = new Date(ts);
  return d.toISOString().slice(11, 23);
}

/**
 * A workload's spread as the page shows it: on an official (paired) run the stability check's own
 * figure (interquartile range ÷ median of the paired time ratios (trusted engine ÷ candidate), the one its limit
 * applies to), else the spread of the per-sample TPOT ((max − min) ÷ median).
 */
export function workloadSpread(w: { spreadPct: number | null; ratioSpreadPct?: number | null }): {
  text: string;
  title: string;
} {
  if (w.ratioSpreadPct !== null && w.ratioSpreadPct !== undefined)
    return {
      text: `${w.ratioSpreadPct.toFixed(1)}%`,
      title:
        'Interquartile range ÷ median of the paired time ratios (trusted engine ÷ candidate): the timing-stability check’s figure',
    };
  return {
    text: w.spreadPct === null ? '—' : `${w.spreadPct.toFixed(1)}%`,
    title: '(max − min) ÷ median of the per-sample TPOT (the stability check applies to official runs only)',
  };
}
