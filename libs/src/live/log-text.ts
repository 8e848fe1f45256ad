/**
 * How a run's log text is shown to people, the same in the CLI and the web page: an engine's
 * (or a training submission's) bytes are never trusted with the viewer's terminal or page.
 *
 * - Each line is marked with its stream (`LOG_STREAM_MARK`), so a line the engine printed can never
 *   pass for the harness's or the agent's own: "[harness] verdict: succeeded" printed by an engine
 *   shows as `[out] [harness] verdict: succeeded`.
 * - A carriage return starts a new frame of the same line (tqdm, pip): only the last frame shows.
 * - Colour and style (SGR, `ESC[…m`) is the only escape sequence rendered; every other control
 *   character (cursor moves, erase, OSC titles, BEL, C1 controls, bidirectional overrides) is shown
 *   as visible text, e.g. `\x1b[1A`.
 */

/** The stream of a stored line: `out` is the submission's own terminal (stdout and stderr). */
export type LogStreamName = 'out' | 'harness' | 'agent' | 'system';

/** The mark each line starts with, in the CLI and on the web page. */
export const LOG_STREAM_MARK: Record<LogStreamName, string> = {
  out: '[out]',
  harness: '[harness]',
  agent: '[agent]',
  system: '[system]',
};

/**
 * The last frame of a line that carriage returns redraw: `10%\r50%\r100%\r` → `100%`. A trailing
 * carriage return (a terminal's `\r\n`) ends the frame before it; it does not start an empty one.
 * Each `\n`-separated part of a multi-line text (a traceback) keeps its own last frame.
 */
export function lastFrame(text: string): string {
  if (!text.includes('\r')) return text;
  if (text.includes('\n')) return text.split('\n').map(lastFrame).join('\n');
  const end = text.replace(/\r+$/, '');
  return end.slice(end.lastIndexOf('\r') + 1);
}

/**
 * Drops the frames of a line still being written that a later frame has already replaced, keeping
 * the frame in progress (and a carriage return at its end, which a terminal's `\r\n` may follow):
 * what the agent holds of a partial line, so a progress bar never grows it toward the line cap.
 */
export function dropReplacedFrames(partial: string): string {
  const end = partial.replace(/\r+$/, '');
  const i = end.lastIndexOf('\r');
  return i < 0 ? partial : partial.slice(i + 1);
}

/** A piece of a displayed line: plain text, a colour sequence, or a control character shown as text. */
export type LogTextToken =
  { kind: 'text'; text: string } | { kind: 'sgr'; params: string } | { kind: 'control'; text: string };

// SGR: CSI, then numbers separated by ; or :, then m. Nothing else is rendered.
// eslint-disable-next-line no-control-regex
const SGR = /\x1b\[([0-9;:]*)m/y;
// C0 controls but tab and newline, DEL, C1 controls, and the bidirectional overrides and isolates.
// eslint-disable-next-line no-control-regex
const CONTROL = /[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/;

/** A control character as visible text: `\x1b`, `\x07`, `\u202e`. */
export function escapeControl(ch: string): string {
  const code = ch.charCodeAt(0);
  return code < 0x100
    ? `\\x${code.toString(16).padStart(2, '0')}`
    : `\\u${code.toString(16).padStart(4, '0')}`;
}

/** One line of log text (after `lastFrame`) as tokens; `\n` and tab stay in the text. */
export function tokenizeLogText(line: string): LogTextToken[] {
  const text = lastFrame(line);
  const tokens: LogTextToken[] = [];
  let plain = '';
  const flush = () => {
    if (plain) tokens.push({ kind: 'text', text: plain });
    plain = '';
  };
  for (let i = 0; i < text.length; i++) {
    const ch = text[i];
    if (ch === '\x1b') {
      SGR.lastIndex = i;
      const m = SGR.exec(text);
      if (m) {
        flush();
        tokens.push({ kind: 'sgr', params: m[1] });
        i += m[0].length - 1;
        continue;
      }
    }
    if (CONTROL.test(ch)) {
      flush();
      tokens.push({ kind: 'control', text: escapeControl(ch) });
      continue;
    }
    plain += ch;
  }
  flush();
  return tokens;
}

/**
 * A line for a terminal or a file: with `colour`, SGR sequences kept (and the style reset at the
 * end of a line that set one, so it never bleeds into the next); without, SGR dropped. Every other
 * control character is shown escaped. `\n` stays (the caller marks each row).
 */
export function renderLogText(line: string, opts: { colour: boolean }): string {
  let out = '';
  let styled = false;
  for (const t of tokenizeLogText(line)) {
    if (t.kind === 'text' || t.kind === 'control') out += t.text;
    else if (opts.colour) {
      out += `\x1b[${t.params}m`;
      styled = true;
    }
  }
  return styled ? out + '\x1b[0m' : out;
}
