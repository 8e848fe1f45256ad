/**
 * Everything the CLI prints goes through here: results on stdout (tables for people, JSON with
 * `--json`), progress and notices on stderr. Colours only on a TTY and never with NO_COLOR.
 */
export interface Streams {
  stdout: NodeJS.WritableStream & { isTTY?: boolean; columns?: number };
  stderr: NodeJS.WritableStream & { isTTY?: boolean; columns?: number };
  stdin: NodeJS.ReadableStream & { isTTY?: boolean; setRawMode?: (raw: boolean) => unknown };
}

const CODES = {
  red: 31,
  green: 32,
  yellow: 33,
  blue: 34,
  magenta: 35,
  cyan: 36,
  gray: 90,
  bold: 1,
  dim: 2,
} as const;
export type Colour = keyof typeof CODES;

export class Output {
  readonly colour: boolean;
  readonly errColour: boolean;
  private progressShown = false;

  constructor(
    readonly streams: Streams,
    readonly env: NodeJS.ProcessEnv,
    readonly json: boolean,
    noColourFlag = false,
  ) {
    const allowed = !noColourFlag && env.NO_COLOR === undefined && env.TERM !== 'dumb';
    this.colour = allowed && Boolean(streams.stdout.isTTY);
    this.errColour = allowed && Boolean(streams.stderr.isTTY);
  }

  paint(c: Colour, s: string, forStderr = false): string {
    const on = forStderr ? this.errColour : this.colour;
    return on ? `\u001b[${CODES[c]}m${s}\u001b[0m` : s;
  }

  /** A line of the command's result (skipped with --json, which prints `data` instead). */
  line(s = ''): void {
    this.clearProgress();
    this.streams.stdout.write(s + '\n');
  }

  /** Machine-readable output: one JSON document. */
  data(value: unknown): void {
    this.clearProgress();
    this.streams.stdout.write(JSON.stringify(value, null, 2) + '\n');
  }

  /** One compact JSON object per line (for streams such as logs). */
  ndjson(value: unknown): void {
    this.streams.stdout.write(JSON.stringify(value) + '\n');
  }

  /** Notices for people, on stderr so stdout stays clean for pipes. */
  note(s: string): void {
    this.clearProgress();
    this.streams.stderr.write(s + '\n');
  }

  warn(s: string): void {
    this.note(this.paint('yellow', 'warning: ', true) + s);
  }

  get progressEnabled(): boolean {
    return Boolean(this.streams.stderr.isTTY) && this.env.DRYFT_NO_PROGRESS === undefined;
  }

  /** Redraws the one-line progress display on stderr (TTY only). */
  progress(text: string): void {
    if (!this.progressEnabled) return;
    const width = Math.max(20, (this.streams.stderr.columns || 80) - 1);
    this.streams.stderr.write('\r\u001b[2K' + text.slice(0, width));
    this.progressShown = true;
  }

  clearProgress(): void {
    if (!this.progressShown) return;
    this.streams.stderr.write('\r\u001b[2K');
    this.progressShown = false;
  }

  /** A table with a header row; columns padded to their widest cell. */
  table(headers: string[], rows: string[][]): void {
    const widths = headers.map((h, i) =>
      Math.max(visibleLength(h), ...rows.map((r) => visibleLength(r[i] ?? ''))),
    );
    const fmt = (cells: string[]) =>
      cells
        .map((c, i) => (i === cells.length - 1 ? c : c + ' '.repeat(widths[i] - visibleLength(c))))
        .join('  ')
        .trimEnd();
    this.line(this.paint('bold', fmt(headers)));
    for (const r of rows) this.line(fmt(r));
  }
}

export function visibleLength(s: string): number {
  // eslint-disable-next-line no-control-regex
  return s.replace(/\u001b\[[0-9;]*m/g, '').length;
}

export function bar(fraction: number, width = 24): string {
  const f = Math.max(0, Math.min(1, Number.isFinite(fraction) ? fraction : 0));
  const full = Math.round(f * width);
  return '[' + '#'.repeat(full) + '-'.repeat(width - full) + ']';
}

export function formatBytes(n: number): string {
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KiB`;
  return `${(n / 1024 / 1024).toFixed(2)} MiB`;
}

export function formatDuration(seconds: number): string {
  const s = Math.max(0, Math.round(seconds));
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  const r = s % 60;
  if (h) return `${h}h${String(m).padStart(2, '0')}m`;
  if (m) return `${m}m${String(r).padStart(2, '0')}s`;
  return `${r}s`;
}

export function statusColour(status: string): Colour {
  switch (status) {
    case 'succeeded':
      return 'green';
    case 'failed':
      return 'red';
    case 'canceled':
      return 'yellow';
    case 'running':
    case 'assigned':
      return 'cyan';
    default:
      return 'gray';
  }
}

/** "2026-11-30T05:10:00.000Z" → "2026-11-30 05:10" (UTC, like the daily limits). */
export function shortTime(iso: string | null | undefined): string {
  if (!iso) return '-';
  return iso.replace('T', ' ').slice(0, 16);
}

export function formatScore(score: number | null | undefined): string {
  return score === null || score === undefined ? '-' : score.toFixed(2);
}

/** " ± 3.04 (95 % interval 98.46–104.54, 7 pairs)": an official decode score's interval; '' without one. */
export function formatScoreInterval(
  interval: { low: number; high: number; halfWidth: number; level: number } | null | undefined,
  pairs?: number | null,
): string {
  if (!interval) return '';
  const level = Math.round(interval.level * 100);
  const range = `${interval.low.toFixed(2)}–${interval.high.toFixed(2)}`;
  return ` ± ${interval.halfWidth.toFixed(2)} (${level} % interval ${range}${pairs ? `, ${pairs} pairs` : ''})`;
}

const SPARKS = '▁▂▃▄▅▆▇█';

/** A one-line chart of the values (lowest ▁, highest █), resampled to at most `width` points. */
export function sparkline(values: number[], width = 48): string {
  const finite = values.filter((v) => Number.isFinite(v));
  if (finite.length === 0) return '';
  const points =
    finite.length <= width
      ? finite
      : Array.from({ length: width }, (_, i) => {
          // the mean of each bucket, so a short spike still shows
          const from = Math.floor((i * finite.length) / width);
          const to = Math.max(from + 1, Math.floor(((i + 1) * finite.length) / width));
          const part = finite.slice(from, to);
          return part.reduce((a, b) => a + b, 0) / part.length;
        });
  const lo = Math.min(...points);
  const hi = Math.max(...points);
  return points
    .map((v) => SPARKS[hi === lo ? 3 : Math.round(((v - lo) / (hi - lo)) * (SPARKS.length - 1))])
    .join('');
}

/** At most `n` items, evenly spaced, always with the first and the last. */
export function evenlySpaced<T>(items: T[], n: number): T[] {
  if (items.length <= n) return items;
  const out: T[] = [];
  for (let i = 0; i < n; i++) out.push(items[Math.round((i * (items.length - 1)) / (n - 1))]);
  return out;
}

/** A number for a table: 4 significant figures, no exponent for ordinary sizes. */
export function formatNumber(v: number): string {
  if (!Number.isFinite(v)) return String(v);
  if (v !== 0 && (Math.abs(v) >= 1e6 || Math.abs(v) < 1e-3)) return v.toExponential(2);
  return String(Number(v.toPrecision(4)));
}
