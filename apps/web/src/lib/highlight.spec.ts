import { describe, expect, it } from 'vitest';
import { highlight, lines } from './highlight';

const kinds = (text: string, lang: Parameters<typeof highlight>[1] = 'python') =>
  highlight(text, lang)
    .filter((t) => t.kind !== 'plain')
    .map((t) => [t.kind, t.text]);

describe('the code view’s highlighter', () => {
  it('marks Python keywords, names, strings, comments, numbers and decorators', () => {
    expect(kinds('@torch.no_grad()\ndef step(self, x=1.5e-3):  # one step\n    return "ok"\n')).toEqual([
      ['decorator', '@torch.no_grad'],
      ['keyword', 'def'],
      ['name', 'step'],
      ['builtin', 'self'],
      ['number', '1.5e-3'],
      ['comment', '# one step'],
      ['keyword', 'return'],
      ['string', '"ok"'],
    ]);
    expect(kinds("class Engine:\n    '''doc\nstring'''\n")).toEqual([
      ['keyword', 'class'],
      ['name', 'Engine'],
      ['string', "'''doc\nstring'''"],
    ]);
  });

  it('gives back the file exactly, whatever it holds (an unterminated string, markup)', () => {
    for (const text of [
      'x = "open\ny = 2',
      '<script>alert(1)</script> # <b>',
      's = f"{a!r}" + b\'\\x00\'',
      '"""never closed',
    ]) {
      expect(
        highlight(text, 'python')
          .map((t) => t.text)
          .join(''),
      ).toBe(text);
    }
  });

  it('highlights JSON keys apart from values, and leaves plain text alone', () => {
    expect(kinds('{"a": "b", "n": 2, "t": true}', 'json')).toEqual([
      ['key', '"a"'],
      ['string', '"b"'],
      ['key', '"n"'],
      ['number', '2'],
      ['key', '"t"'],
      ['keyword', 'true'],
    ]);
    expect(highlight('def x', 'text')).toEqual([{ kind: 'plain', text: 'def x' }]);
  });

  it('cuts tokens into lines for the numbered view', () => {
    const rows = lines(highlight('a = """x\ny"""\nb', 'python'));
    expect(rows.map((r) => r.map((t) => t.text).join(''))).toEqual(['a = """x', 'y"""', 'b']);
    expect(rows[1][0].kind).toBe('string');
  });
});
