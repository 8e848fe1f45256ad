import type { SubmissionCodeFile } from '@dryft/libs';

/**
 * A small syntax highlighter for the read-only code view: it splits a file into tokens with a kind
 * the page colours. It never produces HTML (the page renders each token's text as text), so a
 * submission's content cannot inject markup, whatever it holds.
 */
export type TokenKind =
  'plain' | 'comment' | 'string' | 'number' | 'keyword' | 'builtin' | 'name' | 'decorator' | 'key';
export interface Token {
  kind: TokenKind;
  text: string;
}

const PY_KEYWORDS = new Set(
  'False None True and as assert async await break class continue def del elif else except finally for from global if import in is lambda match case nonlocal not or pass raise return try while with yield'.split(
    ' ',
  ),
);
const PY_BUILTINS = new Set(
  'abs all any bool bytes dict enumerate float getattr hasattr int isinstance len list max min print range repr round self set sorted str sum super tuple type zip'.split(
    ' ',
  ),
);

type Rule = [RegExp, TokenKind | ((text: string, previous: string) => TokenKind)];

const word = (text: string, previous: string): TokenKind => {
  if (PY_KEYWORDS.has(text)) return 'keyword';
  if (previous === 'def' || previous === 'class') return 'name';
  return PY_BUILTINS.has(text) ? 'builtin' : 'plain';
};

const RULES: Partial<Record<SubmissionCodeFile['language'], Rule[]>> = {
  python: [
    [/#[^\n]*/y, 'comment'],
    [/(?:[rRbBuUfF]{1,2})?(?:"""[\s\S]*?(?:"""|$(?![\s\S]))|'''[\s\S]*?(?:'''|$(?![\s\S])))/y, 'string'],
    [/(?:[rRbBuUfF]{1,2})?(?:"(?:\\.|[^"\\\n])*"?|'(?:\\.|[^'\\\n])*'?)/y, 'string'],
    [/@[A-Za-z_][\w.]*/y, 'decorator'],
    [
      /\b(?:0[xob][\da-fA-F_]+|\d[\d_]*(?:\.[\d_]*)?(?:[eE][+-]?\d+)?j?|\.\d[\d_]*(?:[eE][+-]?\d+)?)/y,
      'number',
    ],
    [/[A-Za-z_]\w*/y, word],
  ],
  json: [
    [/"(?:\\.|[^"\\\n])*"(?=\s*:)/y, 'key'],
    [/"(?:\\.|[^"\\\n])*"?/y, 'string'],
    [/-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?/y, 'number'],
    [/\b(?:true|false|null)\b/y, 'keyword'],
  ],
  yaml: [
    [/#[^\n]*/y, 'comment'],
    [/^[ \t-]*[\w.-]+(?=\s*:)/my, 'key'],
    [/"(?:\\.|[^"\\\n])*"?|'[^'\n]*'?/y, 'string'],
    [/-?\b\d+(?:\.\d+)?\b/y, 'number'],
    [/\b(?:true|false|null|yes|no)\b/y, 'keyword'],
  ],
  toml: [
    [/#[^\n]*/y, 'comment'],
    [/^\s*\[[^\]\n]*\]/my, 'keyword'],
    [/^\s*[\w.-]+(?=\s*=)/my, 'key'],
    [/"(?:\\.|[^"\\\n])*"?|'[^'\n]*'?/y, 'string'],
    [/-?\b\d+(?:\.\d+)?\b/y, 'number'],
    [/\b(?:true|false)\b/y, 'keyword'],
  ],
  shell: [
    [/#[^\n]*/y, 'comment'],
    [/"(?:\\.|[^"\\])*"?|'[^']*'?/y, 'string'],
    [/\$\{?[\w@#?*!-]+\}?/y, 'builtin'],
  ],
  markdown: [
    [/^#{1,6} [^\n]*/my, 'keyword'],
    [/`[^`\n]*`/y, 'string'],
  ],
};

/** The file as tokens, in order; their texts joined are exactly the file. */
export function highlight(text: string, language: SubmissionCodeFile['language']): Token[] {
  const rules = RULES[language];
  if (!rules) return [{ kind: 'plain', text }];
  const out: Token[] = [];
  let plain = '';
  let previousWord = '';
  let i = 0;
  const flush = () => {
    if (plain) out.push({ kind: 'plain', text: plain });
    plain = '';
  };
  while (i < text.length) {
    let matched = false;
    for (const [pattern, kind] of rules) {
      pattern.lastIndex = i;
      const m = pattern.exec(text);
      if (!m || m[0].length === 0) continue;
      const k = typeof kind === 'function' ? kind(m[0], previousWord) : kind;
      if (typeof kind === 'function') previousWord = m[0];
      if (k === 'plain') plain += m[0];
      else {
        flush();
        out.push({ kind: k, text: m[0] });
      }
      i += m[0].length;
      matched = true;
      break;
    }
    if (!matched) {
      plain += text[i];
      i += 1;
    }
  }
  flush();
  return out;
}

/** Tokens split into lines (a token that spans lines, a docstring say, is cut at each newline). */
export function lines(tokens: Token[]): Token[][] {
  const rows: Token[][] = [[]];
  for (const t of tokens) {
    const parts = t.text.split('\n');
    parts.forEach((part, n) => {
      if (n > 0) rows.push([]);
      if (part) rows[rows.length - 1].push({ kind: t.kind, text: part });
    });
  }
  return rows;
}
