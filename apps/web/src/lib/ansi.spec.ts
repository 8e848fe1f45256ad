import { describe, expect, it } from 'vitest';
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

  it('drops cursor movement, OSC titles and carriage returns', () => {
    const { segments } = parseAnsi('\x1b]0;title\x07\x1b[2K\rprogress 50%\x1b[1A');
    expect(segments.map((s) => s.text).join('')).toBe('progress 50%');
  });

  it('carries style across lines when asked', () => {
    const first = parseAnsi('\x1b[33mwarn');
    const second = parseAnsi('still yellow', first.end);
    expect(second.segments[0].style.fg).toBe(PALETTE[3]);
  });

  it('strips escapes for search and download, and renders CSS', () => {
    expect(stripAnsi('\x1b[1m\x1b[34mblue\x1b[0m')).toBe('blue');
    expect(styleToCss({ fg: '#000', bold: true, underline: true })).toBe(
      'color:#000;font-weight:600;text-decoration:underline',
    );
  });
});
