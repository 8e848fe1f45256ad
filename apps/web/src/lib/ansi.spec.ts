import { describe, expect, it } from 'vitest';
import { LOG_STREAM_MARK } from '@dryft/libs';
import { parseAnsi, PALETTE, stripAnsi, styleToCss } from './ansi';

describe('parseAnsi', () => {
  it('passes plain text through as one unstyled segment', () => {
    expect(parseAnsi('hello world').segments).toEqual([{ text: 'hello world', style: {} }]);
  });

  it('colours text and resets', () => {
    const { segments } = parseAnsi('\x1b[31merror\x1b[0m ok');
    expect(segments).toEqual([
      { text: 'error', style: { fg: PALETTE[1] } },
      { text: ' ok', style: {} },
    ]);
  });

  it('handles bold, bright, 256-colour and truecolour codes', () => {
    expect(parseAnsi('\x1b[1;92mA').segments[0].style).toEqual({ bold: true, fg: PALETTE[10] });
    expect(parseAnsi('\x1b[38;5;196mB').segments[0].style.fg).toBe('rgb(255,0,0)');
    expect(parseAnsi('\x1b[48;2;1;2;3mC').segments[0].style.bg).toBe('rgb(1,2,3)');
    expect(parseAnsi('\x1b[38;5;240mD').segments[0].style.fg).toBe('rgb(88,88,88)');
  });

  it('shows cursor movement, OSC titles and other control bytes as visible text, never acting on them', () => {
    const { segments } = parseAnsi('\x1b]0;title\x07\x1b[2Kstep\x1b[1A\x00\x9b2J\u202eend');
    expect(segments.map((s) => s.text).join('')).toBe(
      '\\x1b]0;title\\x07\\x1b[2Kstep\\x1b[1A\\x00\\x9b2J\\u202eend',
    );
    // the escaped bytes are their own segments, so the page can show them apart from the text
    expect(segments.filter((s) => s.control).map((s) => s.text)).toEqual([
      '\\x1b',
      '\\x07',
      '\\x1b',
      '\\x1b',
      '\\x00',
      '\\x9b',
      '\\u202e',
    ]);
    expect(segments.every((s) => !s.text.includes('\x1b'))).toBe(true);
  });

  it('a carriage-return progress bar shows its last frame, in colour if it has one', () => {
    expect(parseAnsi(' 10%|#\r 50%|#####\r100%|##########\r').segments).toEqual([
      { text: '100%|##########', style: {} },
    ]);
    expect(parseAnsi('\x1b[31mold\r\x1b[32mnew').segments).toEqual([
      { text: 'new', style: { fg: PALETTE[2] } },
    ]);
    expect(stripAnsi('frame 1\rframe 2\r')).toBe('frame 2');
  });

  it('a forged harness line keeps what it is: only colour is rendered, the mark says which stream', () => {
    const forged = '\x1b[1A\x1b[2K\x1b[34m[harness] verdict: succeeded. Official score 999.00';
    expect(stripAnsi(forged)).toBe('\\x1b[1A\\x1b[2K[harness] verdict: succeeded. Official score 999.00');
    expect(LOG_STREAM_MARK.out).toBe('[out]');
    expect(LOG_STREAM_MARK.harness).toBe('[harness]');
  });

  it('carries style across lines when asked', () => {
    const first = parseAnsi('\x1b[33mwarn');
    const second = parseAnsi('still yellow', first.end);
    expect(second.segments[0].style.fg).toBe(PALETTE[3]);
  });

  it('strips colour for search and download (other escapes stay visible), and renders CSS', () => {
    expect(stripAnsi('\x1b[1m\x1b[34mblue\x1b[0m')).toBe('blue');
    expect(stripAnsi('a\x1b]0;t\x07b')).toBe('a\\x1b]0;t\\x07b');
    expect(styleToCss({ fg: '#000', bold: true, underline: true })).toBe(
      'color:#000;font-weight:600;text-decoration:underline',
    );
  });
});
