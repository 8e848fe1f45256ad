import { renderLogText, tokenizeLogText } from '@dryft/libs';

/**
 * A small ANSI SGR renderer for run logs: text becomes styled segments (rendered as spans, never
 * as HTML); every other escape sequence (cursor moves, OSC titles) is shown as text, never obeyed.
 */
export interface AnsiStyle {
  fg?: string;
  bg?: string;
  bold?: boolean;
  dim?: boolean;
  italic?: boolean;
  underline?: boolean;
}

export interface AnsiSegment {
  text: string;
  style: AnsiStyle;
  /** A control byte written out as text (`\x1b`), shown apart from what the program printed. */
  control?: true;
}

/** The 16 basic colours, tuned for a light log background. */
export const PALETTE = [
  '#1f2328',
  '#c62828',
  '#2e7d32',
  '#a66f00',
  '#1f5fd1',
  '#8e3fb0',
  '#0f7c8c',
  '#6e7781',
  '#57606a',
  '#e5534b',
  '#3fa34d',
  '#c9a100',
  '#4a8cf0',
  '#b35ad1',
  '#1ba3b5',
  '#8c959f',
];

function xterm256(n: number): string | undefined {
  if (n < 0 || n > 255) return undefined;
  if (n < 16) return PALETTE[n];
  if (n < 232) {
    const i = n - 16;
    const level = (v: number) => (v === 0 ? 0 : 55 + v * 40);
    const r = level(Math.floor(i / 36));
    const g = level(Math.floor(i / 6) % 6);
    const b = level(i % 6);
    return `rgb(${r},${g},${b})`;
  }
  const gray = 8 + (n - 232) * 10;
  return `rgb(${gray},${gray},${gray})`;
}

function applySgr(params: number[], style: AnsiStyle): AnsiStyle {
  let s = { ...style };
  if (params.length === 0) params = [0];
  for (let i = 0; i < params.length; i++) {
    const p = params[i];
    if (p === 0) s = {};
    else if (p === 1) s.bold = true;
    else if (p === 2) s.dim = true;
    else if (p === 3) s.italic = true;
    else if (p === 4) s.underline = true;
    else if (p === 22) {
      s.bold = false;
      s.dim = false;
    } else if (p === 23) s.italic = false;
    else if (p === 24) s.underline = false;
    else if (p >= 30 && p <= 37) s.fg = PALETTE[p - 30];
    else if (p >= 90 && p <= 97) s.fg = PALETTE[p - 90 + 8];
    else if (p === 39) delete s.fg;
    else if (p >= 40 && p <= 47) s.bg = PALETTE[p - 40];
    else if (p >= 100 && p <= 107) s.bg = PALETTE[p - 100 + 8];
    else if (p === 49) delete s.bg;
    else if (p === 38 || p === 48) {
      const key = p === 38 ? 'fg' : 'bg';
      if (params[i + 1] === 5) {
        const c = xterm256(params[i + 2]);
        if (c) s[key] = c;
        i += 2;
      } else if (params[i + 1] === 2) {
        const [r, g, b] = params.slice(i + 2, i + 5);
        if ([r, g, b].every((v) => Number.isInteger(v) && v >= 0 && v <= 255)) s[key] = `rgb(${r},${g},${b})`;
        i += 4;
      }
    }
  }
  for (const k of Object.keys(s) as (keyof AnsiStyle)[]) if (s[k] === false) delete s[k];
  return s;
}

/**
 * Splits one line into styled segments, by the rules the CLI follows too (libs/src/live/log-text.ts):
 * a `\r` progress bar shows its last frame, colour (SGR) is rendered, and every other control byte
 * (cursor moves, erase, OSC titles, BEL, C1, bidirectional overrides) is a `control` segment whose
 * text is the byte written out (`\x1b`), shown apart and never acted on. `start` carries the style
 * over from an earlier line.
 */
export function parseAnsi(line: string, start: AnsiStyle = {}): { segments: AnsiSegment[]; end: AnsiStyle } {
  const segments: AnsiSegment[] = [];
  let style = start;
  const push = (text: string, control = false) => {
    const prev = segments[segments.length - 1];
    if (prev && prev.style === style && !prev.control && !control) prev.text += text;
    else segments.push(control ? { text, style, control: true } : { text, style });
  };
  for (const t of tokenizeLogText(line)) {
    if (t.kind === 'text') push(t.text);
    else if (t.kind === 'control') push(t.text, true);
    else {
      const params = t.params
        .split(/[;:]/)
        .filter((x) => x !== '')
        .map((x) => Number(x));
      style = applySgr(params, style);
    }
  }
  return { segments, end: style };
}

/** Plain text for search and download: colour dropped, other control bytes written out, last frame. */
export function stripAnsi(line: string): string {
  return renderLogText(line, { colour: false });
}

export function styleToCss(style: AnsiStyle): string {
  const parts: string[] = [];
  if (style.fg) parts.push(`color:${style.fg}`);
  if (style.bg) parts.push(`background:${style.bg}`);
  if (style.bold) parts.push('font-weight:600');
  if (style.dim) parts.push('opacity:.65');
  if (style.italic) parts.push('font-style:italic');
  if (style.underline) parts.push('text-decoration:underline');
  return parts.join(';');
}
