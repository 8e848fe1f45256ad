/**
 * A Python 3.11 syntax checker in plain TypeScript: a tokenizer and a recursive-descent parser that
 * follow the language reference's grammar, so the API, the CLI (which must not need Python) and the
 * browser refuse the same broken files before a run is spent on them. It executes nothing and builds
 * only what the entry-point check needs: module-level bindings, classes with their methods' parameters.
 *
 * It is exact on what decides a SyntaxError at import (tokens, indentation, brackets, strings,
 * f-strings, statements, expressions, patterns, assignment targets) and leaves the compiler's later
 * checks (`return` outside a function, duplicate arguments) to the run, as `ast.parse` does.
 */

export interface PythonSyntaxError {
  /** 1-based line. */
  line: number;
  /** 1-based column (in characters). */
  column: number;
  message: string;
}

export interface FunctionInfo {
  name: string;
  line: number;
  column: number;
  /** Positional parameters (positional-only and normal), `self` included. */
  positional: string[];
  /** How many of the positional parameters have defaults. */
  defaults: number;
  varargs: boolean;
  decorated: boolean;
}

export interface ClassInfo {
  name: string;
  line: number;
  column: number;
  bases: number;
  methods: Map<string, FunctionInfo>;
}

export interface ModuleBinding {
  name: string;
  line: number;
  column: number;
  kind: 'class' | 'def' | 'assign' | 'import';
  /** For `NAME = callee(...)`: the called name (last dotted part). */
  calls?: string;
  /** Keyword argument names of that call. */
  keywords?: string[];
  cls?: ClassInfo;
}

export interface PythonModule {
  ok: boolean;
  error?: PythonSyntaxError;
  /** Names bound at module level (outside functions and classes), in order. */
  bindings: ModuleBinding[];
}

// ---------------------------------------------------------------------------------------- tokens

type TokType = 'name' | 'number' | 'string' | 'op' | 'newline' | 'indent' | 'dedent' | 'end' | 'error';

interface Token {
  type: TokType;
  value: string;
  line: number;
  col: number;
  /** Strings: the prefix letters (lower case), the body and where the body starts. */
  prefix?: string;
  body?: string;
  bodyLine?: number;
  bodyCol?: number;
  quote?: string;
  /** An 'error' token: the tokenizer stopped here; the parser raises it when it gets this far. */
  error?: SyntaxFail;
}

class SyntaxFail extends Error {
  constructor(
    readonly line: number,
    readonly col: number,
    message: string,
  ) {
    super(message);
  }
}

const KEYWORDS = new Set([
  'False',
  'None',
  'True',
  'and',
  'as',
  'assert',
  'async',
  'await',
  'break',
  'class',
  'continue',
  'def',
  'del',
  'elif',
  'else',
  'except',
  'finally',
  'for',
  'from',
  'global',
  'if',
  'import',
  'in',
  'is',
  'lambda',
  'nonlocal',
  'not',
  'or',
  'pass',
  'raise',
  'return',
  'try',
  'while',
  'with',
  'yield',
]);

const OPERATORS = [
  '**=',
  '//=',
  '>>=',
  '<<=',
  '...',
  '->',
  ':=',
  '!=',
  '==',
  '<=',
  '>=',
  '**',
  '//',
  '<<',
  '>>',
  '+=',
  '-=',
  '*=',
  '/=',
  '%=',
  '&=',
  '|=',
  '^=',
  '@=',
  '+',
  '-',
  '*',
  '/',
  '%',
  '@',
  '&',
  '|',
  '^',
  '~',
  '<',
  '>',
  '(',
  ')',
  '[',
  ']',
  '{',
  '}',
  ',',
  ':',
  ';',
  '.',
  '=',
];

/** Operators by their first character, longest first. */
const OPERATORS_BY_CHAR = new Map<string, string[]>();
for (const o of OPERATORS) OPERATORS_BY_CHAR.set(o[0], [...(OPERATORS_BY_CHAR.get(o[0]) ?? []), o]);

const ID_START = /[\p{L}\p{Nl}_\u2118\u212e]/u;
const ID_CONTINUE = /[\p{L}\p{Nl}\p{Mn}\p{Mc}\p{Nd}\p{Pc}_\u00b7\u0387\u1369-\u1371\u19da\u2118\u212e]/u;
/** The rest of an identifier, read at once (sticky). */
const ID_REST = new RegExp(`${ID_CONTINUE.source}*`, 'uy');
const STRING_PREFIX = /^(?:[rR][bBfF]?|[bBfF][rR]?|[uU])$/;
const NUMBER =
  /^(?:0[xX](?:_?[0-9a-fA-F])+|0[oO](?:_?[0-7])+|0[bB](?:_?[01])+|(?:(?:\d(?:_?\d)*)?\.\d(?:_?\d)*|\d(?:_?\d)*\.?)(?:[eE][+-]?\d(?:_?\d)*)?[jJ]?)/;
/** Keywords that may follow a number directly in 3.11 (`1if x else 2`). */
const AFTER_NUMBER = /^(?:and|else|for|if|in|is|not|or)\b/;
const CLOSERS: Record<string, string> = { ')': '(', ']': '[', '}': '{' };

/**
 * Tokenizes the whole source. A tokenizer error becomes a final 'error' token, so that (as in
 * CPython, whose parser pulls tokens lazily) an earlier parse error is the one reported.
 */
function tokenize(src: string, opts: { inner?: boolean } = {}): Token[] {
  const toks: Token[] = [];
  try {
    tokenizeInto(src, opts, toks);
  } catch (err) {
    if (!(err instanceof SyntaxFail)) throw err;
    toks.push({ type: 'error', value: '', line: err.line, col: err.col, error: err });
  }
  return toks;
}

function tokenizeInto(src: string, opts: { inner?: boolean }, toks: Token[]): void {
  const lines = src.split(/\r\n|\r|\n/);
  const indents: number[] = [0];
  const altIndents: number[] = [0];
  const brackets: { ch: string; line: number; col: number }[] = [];
  let i = 0; // line index
  let continued = false; // the previous physical line ended with a backslash
  let lineHasTokens = false;
  const push = (t: Token) => {
    toks.push(t);
    lineHasTokens = true;
  };
  while (i < lines.length) {
    let text = lines[i];
    let lineNo = i + 1;
    let pos = 0;
    if (brackets.length === 0 && !continued && !opts.inner) {
      // The start of a logical line: measure its indentation (tabs to multiples of 8, and with tab
      // size 1 to catch inconsistent mixing, as CPython does).
      let col = 0;
      let alt = 0;
      // CPython's tokenizer lets a backslash continue the indentation onto the next physical line:
      // the first backslash preceded by whitespace fixes the line's indentation (one at column 0
      // does not, and the count goes on on the next line).
      let continuedAt = 0;
      while (pos < text.length) {
        const c = text[pos];
        if (c === '\\' && pos === text.length - 1 && i + 1 < lines.length) {
          continuedAt = continuedAt || col;
          i += 1;
          text = lines[i];
          lineNo = i + 1;
          pos = 0;
          continue;
        }
        if (c === ' ') {
          col += 1;
          alt += 1;
        } else if (c === '\t') {
          col = Math.floor(col / 8) * 8 + 8;
          alt += 1;
        } else if (c === '\f') {
          col = 0;
          alt = 0;
        } else break;
        pos += 1;
      }
      if (continuedAt) col = alt = continuedAt;
      const rest = text.slice(pos);
      if (rest === '' || rest.startsWith('#')) {
        // Blank and comment-only lines do not count for indentation.
        i += 1;
        continue;
      }
      const top = indents[indents.length - 1];
      if (col > top) {
        if (alt <= altIndents[altIndents.length - 1])
          throw new SyntaxFail(lineNo, pos + 1, 'inconsistent use of tabs and spaces in indentation');
        indents.push(col);
        altIndents.push(alt);
        push({ type: 'indent', value: '', line: lineNo, col: pos + 1 });
      } else {
        while (col < indents[indents.length - 1]) {
          indents.pop();
          altIndents.pop();
          push({ type: 'dedent', value: '', line: lineNo, col: pos + 1 });
        }
        if (col !== indents[indents.length - 1])
          throw new SyntaxFail(lineNo, pos + 1, 'unindent does not match any outer indentation level');
        if (alt !== altIndents[altIndents.length - 1])
          throw new SyntaxFail(lineNo, pos + 1, 'inconsistent use of tabs and spaces in indentation');
      }
    }
    continued = false;
    while (pos < text.length) {
      const c = text[pos];
      if (c === ' ' || c === '\t' || c === '\f') {
        pos += 1;
        continue;
      }
      if (c === '#') break;
      if (c === '\\') {
        if (pos === text.length - 1) {
          if (i === lines.length - 1 || (i === lines.length - 2 && lines[i + 1] === ''))
            throw new SyntaxFail(lineNo, pos + 1, 'unexpected EOF while parsing');
          continued = true;
          break;
        }
        throw new SyntaxFail(lineNo, pos + 2, 'unexpected character after line continuation character');
      }
      const col = pos + 1;
      // Strings (with their prefixes) before names.
      let prefixEnd = pos;
      while (prefixEnd < text.length && prefixEnd - pos < 2 && /[rRbBuUfF]/.test(text[prefixEnd]))
        prefixEnd += 1;
      const q = text[prefixEnd];
      if ((q === '"' || q === "'") && (prefixEnd === pos || STRING_PREFIX.test(text.slice(pos, prefixEnd)))) {
        const prefix = text.slice(pos, prefixEnd).toLowerCase();
        const raw = prefix.includes('r');
        const triple = text.slice(prefixEnd, prefixEnd + 3) === q.repeat(3);
        const quote = triple ? q.repeat(3) : q;
        let j = prefixEnd + quote.length;
        let ln = i;
        let body = '';
        const bodyLine = lineNo;
        const bodyCol = j + 1;
        for (;;) {
          const t = lines[ln];
          if (j >= t.length) {
            // End of a physical line inside the string.
            if (!triple) {
              throw new SyntaxFail(lineNo, col, `unterminated string literal (detected at line ${ln + 1})`);
            }
            if (ln + 1 >= lines.length)
              throw new SyntaxFail(
                lineNo,
                col,
                `unterminated triple-quoted string literal (detected at line ${lines.length})`,
              );
            body += '\n';
            ln += 1;
            j = 0;
            continue;
          }
          const ch = t[j];
          if (ch === '\\') {
            if (j + 1 >= t.length) {
              // An escaped newline: the string goes on on the next line.
              if (ln + 1 >= lines.length)
                throw new SyntaxFail(
                  lineNo,
                  col,
                  triple
                    ? `unterminated triple-quoted string literal (detected at line ${ln + 1})`
                    : `unterminated string literal (detected at line ${ln + 1})`,
                );
              body += raw ? '\\\n' : '';
              ln += 1;
              j = 0;
              continue;
            }
            body += ch + t[j + 1];
            j += 2;
            continue;
          }
          if (t.startsWith(quote, j)) {
            j += quote.length;
            break;
          }
          body += ch;
          j += 1;
        }
        if (prefix.includes('b') && [...body].some((ch) => ch.charCodeAt(0) > 0x7f))
          throw new SyntaxFail(lineNo, col, 'bytes can only contain ASCII literal characters');
        if (!raw) {
          const bad = escapeError(body, prefix.includes('b'));
          if (bad) throw new SyntaxFail(lineNo, col, bad);
        }
        push({
          type: 'string',
          value: text.slice(pos, prefixEnd) + quote,
          line: lineNo,
          col,
          prefix,
          body,
          bodyLine,
          bodyCol,
          quote,
        });
        if (ln !== i) {
          // The string spanned lines: scanning goes on on its last line.
          i = ln;
          text = lines[i];
          lineNo = i + 1;
        }
        pos = j;
        continue;
      }
      if (ID_START.test(c) || (c >= '\ud800' && c <= '\udbff' && ID_START.test(text.slice(pos, pos + 2)))) {
        let j = pos + (c >= '\ud800' && c <= '\udbff' ? 2 : 1);
        if (j < text.length) {
          ID_REST.lastIndex = j;
          const rest = ID_REST.exec(text);
          if (rest) j += rest[0].length;
        }
        push({ type: 'name', value: text.slice(pos, j), line: lineNo, col });
        pos = j;
        continue;
      }
      if (/[0-9]/.test(c) || (c === '.' && /[0-9]/.test(text[pos + 1] ?? ''))) {
        const m = NUMBER.exec(text.slice(pos));
        const num = m ? m[0] : c;
        const after = text.slice(pos + num.length);
        if (/^[0-9A-Za-z_]/.test(after) && !AFTER_NUMBER.test(after)) {
          const kind = /^0[xX]/.test(num)
            ? 'hexadecimal'
            : /^0[oO]/.test(num)
              ? 'octal'
              : /^0[bB]/.test(num)
                ? 'binary'
                : 'decimal';
          throw new SyntaxFail(lineNo, col, `invalid ${kind} literal`);
        }
        if (/^0+[1-9][0-9_]*$/.test(num.replace(/_/g, '')) && /^[0-9_]+$/.test(num))
          throw new SyntaxFail(
            lineNo,
            col,
            'leading zeros in decimal integer literals are not permitted; use an 0o prefix for octal integers',
          );
        push({ type: 'number', value: num, line: lineNo, col });
        pos += num.length;
        continue;
      }
      const op = OPERATORS_BY_CHAR.get(c)?.find((o) => text.startsWith(o, pos));
      if (!op) {
        if (c === '!' || c === '$' || c === '?' || c === '`')
          throw new SyntaxFail(lineNo, col, 'invalid syntax');
        throw new SyntaxFail(
          lineNo,
          col,
          `invalid character '${String.fromCodePoint(text.codePointAt(pos)!)}' (U+${text
            .codePointAt(pos)!
            .toString(16)
            .toUpperCase()
            .padStart(4, '0')})`,
        );
      }
      const tok: Token = { type: 'op', value: op, line: lineNo, col };
      handleBracket(tok);
      push(tok);
      pos += op.length;
    }
    i += 1;
    if (!continued && brackets.length === 0 && lineHasTokens && !opts.inner) {
      const last = toks[toks.length - 1];
      toks.push({ type: 'newline', value: '', line: last.line, col: last.col + last.value.length });
      lineHasTokens = false;
    }
  }
  if (brackets.length > 0) {
    const b = brackets[brackets.length - 1];
    throw new SyntaxFail(b.line, b.col, `'${b.ch}' was never closed`);
  }
  const endLine = lines.length;
  if (!opts.inner) {
    if (
      toks.length > 0 &&
      toks[toks.length - 1].type !== 'newline' &&
      toks[toks.length - 1].type !== 'dedent'
    )
      toks.push({ type: 'newline', value: '', line: endLine, col: 1 });
    while (indents.length > 1) {
      indents.pop();
      toks.push({ type: 'dedent', value: '', line: endLine + 1, col: 1 });
    }
  }
  toks.push({ type: 'end', value: '', line: endLine + 1, col: 1 });

  function handleBracket(tok: Token) {
    if (tok.type !== 'op') return;
    if (tok.value === '(' || tok.value === '[' || tok.value === '{') {
      brackets.push({ ch: tok.value, line: tok.line, col: tok.col });
      if (brackets.length > 200) throw new SyntaxFail(tok.line, tok.col, 'too many nested parentheses');
    } else if (CLOSERS[tok.value]) {
      const open = brackets.pop();
      if (!open) throw new SyntaxFail(tok.line, tok.col, `unmatched '${tok.value}'`);
      if (open.ch !== CLOSERS[tok.value])
        throw new SyntaxFail(
          tok.line,
          tok.col,
          open.line === tok.line
            ? `closing parenthesis '${tok.value}' does not match opening parenthesis '${open.ch}'`
            : `closing parenthesis '${tok.value}' does not match opening parenthesis '${open.ch}' on line ${open.line}`,
        );
    }
  }
}

// ---------------------------------------------------------------------------------------- parser

type ExprKind =
  | 'name'
  | 'attr'
  | 'subscript'
  | 'starred'
  | 'tuple'
  | 'list'
  | 'call'
  | 'literal'
  | 'compare'
  | 'op'
  | 'other';

interface Expr {
  kind: ExprKind;
  line: number;
  col: number;
  parens?: boolean;
  elts?: Expr[];
  inner?: Expr;
  name?: string;
  keywords?: string[];
  /** What it is, for "cannot assign to …" messages. */
  what?: string;
}

interface Scope {
  func: boolean;
  cls?: ClassInfo;
  moduleLevel: boolean;
}

class Parser {
  private p = 0;
  readonly bindings: ModuleBinding[] = [];
  private scope: Scope = { func: false, moduleLevel: true };

  constructor(private readonly toks: Token[]) {}

  /** Index of the token the parser stopped at. */
  get position(): number {
    return this.p;
  }

  private get t(): Token {
    return this.cur();
  }
  /** The current token (a call, so that TypeScript does not narrow it across `this.p += 1`). */
  private cur(): Token {
    const tok = this.toks[this.p];
    if (tok.type === 'error') throw tok.error!;
    return tok;
  }
  private peek(n = 1): Token {
    const tok = this.toks[Math.min(this.p + n, this.toks.length - 1)];
    if (tok.type === 'error') throw tok.error!;
    return tok;
  }
  private isOp(v: string, tok = this.t): boolean {
    return tok.type === 'op' && tok.value === v;
  }
  private isKw(v: string, tok = this.t): boolean {
    return tok.type === 'name' && tok.value === v;
  }
  private fail(tok: Token = this.t, message?: string): never {
    if (!message) {
      if (tok.type === 'indent') message = 'unexpected indent';
      else if (tok.type === 'dedent') message = 'unindent does not match any outer indentation level';
      else if (tok.type === 'end') message = 'unexpected EOF while parsing';
      else message = 'invalid syntax';
    }
    throw new SyntaxFail(tok.line, tok.col, message);
  }
  private expectOp(v: string, message?: string): Token {
    if (!this.isOp(v)) this.fail(this.t, message ?? (v === ':' ? "expected ':'" : undefined));
    return this.toks[this.p++];
  }
  private expectKw(v: string): Token {
    if (!this.isKw(v)) this.fail();
    return this.toks[this.p++];
  }
  private name(): Token {
    if (this.cur().type !== 'name' || KEYWORDS.has(this.t.value)) this.fail();
    return this.toks[this.p++];
  }
  private acceptOp(v: string): boolean {
    if (this.isOp(v)) {
      this.p += 1;
      return true;
    }
    return false;
  }
  private acceptKw(v: string): boolean {
    if (this.isKw(v)) {
      this.p += 1;
      return true;
    }
    return false;
  }

  private bind(b: ModuleBinding): void {
    if (this.scope.moduleLevel) this.bindings.push(b);
  }

  /** An f-string replacement field's expression, tokenized inside '(' ')'. */
  fstringExpression(): void {
    this.expectOp('(');
    if (this.isKw('yield')) this.yieldExpr();
    else {
      // A lone `*x` is no value to format (`*a, b` is a tuple, and allowed).
      const value = this.starExpressions();
      if (value.kind === 'starred') this.fail(this.tokenAt(value), 'cannot use starred expression here');
    }
    this.expectOp(')');
    if (this.cur().type !== 'end') this.fail();
  }

  parseFile(): void {
    while (this.cur().type !== 'end') {
      if (this.cur().type === 'newline') {
        this.p += 1;
        continue;
      }
      this.statement();
    }
  }

  // ---- statements

  private statement(): void {
    const t = this.t;
    if (t.type === 'indent') this.fail(t, 'unexpected indent');
    if (t.type === 'dedent') this.fail(t);
    if (t.type === 'name') {
      switch (t.value) {
        case 'def':
          return this.funcDef(false);
        case 'class':
          return this.classDef();
        case 'if':
          return this.ifStmt();
        case 'while':
          return this.whileStmt();
        case 'for':
          return this.forStmt();
        case 'with':
          return this.withStmt();
        case 'try':
          return this.tryStmt();
        case 'async': {
          const n = this.peek();
          if (this.isKw('def', n)) {
            this.p += 1;
            return this.funcDef(false);
          }
          if (this.isKw('with', n)) {
            this.p += 1;
            return this.withStmt();
          }
          if (this.isKw('for', n)) {
            this.p += 1;
            return this.forStmt();
          }
          this.fail();
          break;
        }
        case 'match':
          if (this.tryMatch()) return;
          break;
      }
    }
    if (this.isOp('@')) return this.decorated();
    this.simpleStmts();
  }

  private simpleStmts(): void {
    for (;;) {
      this.simpleStmt();
      if (this.acceptOp(';')) {
        if (this.cur().type === 'newline') break;
        continue;
      }
      break;
    }
    if (this.cur().type !== 'newline') this.fail();
    this.p += 1;
  }

  private simpleStmt(): void {
    const t = this.t;
    if (t.type === 'name') {
      switch (t.value) {
        case 'pass':
        case 'break':
        case 'continue':
          this.p += 1;
          return;
        case 'return':
          this.p += 1;
          if (!this.atStmtEnd()) this.starExpressions();
          return;
        case 'raise':
          this.p += 1;
          if (!this.atStmtEnd()) {
            this.expression();
            if (this.acceptKw('from')) this.expression();
          }
          return;
        case 'global':
        case 'nonlocal':
          this.p += 1;
          do this.name();
          while (this.acceptOp(','));
          return;
        case 'del': {
          this.p += 1;
          const targets = this.starExpressions();
          this.checkTarget(targets, 'delete');
          return;
        }
        case 'assert':
          this.p += 1;
          this.expression();
          if (this.acceptOp(',')) this.expression();
          return;
        case 'import':
          this.p += 1;
          do {
            const first = this.dottedName();
            let bound = first.split('.')[0];
            if (this.acceptKw('as')) bound = this.name().value;
            this.bind({ name: bound, line: t.line, column: t.col, kind: 'import' });
          } while (this.acceptOp(','));
          return;
        case 'from':
          return this.fromImport();
      }
    }
    // Expression statements and assignments.
    const first = this.isKw('yield') ? this.yieldExpr() : this.starExpressions();
    if (this.isOp(':')) {
      // Annotated assignment: one simple target.
      const target = first;
      if (target.kind === 'list')
        this.fail(this.tokenAt(target), 'only single target (not list) can be annotated');
      if (target.kind === 'tuple')
        this.fail(this.tokenAt(target), 'only single target (not tuple) can be annotated');
      if (target.kind !== 'name' && target.kind !== 'attr' && target.kind !== 'subscript')
        this.fail(this.tokenAt(target), `illegal target for annotation`);
      this.p += 1;
      this.expression();
      if (this.acceptOp('=')) {
        if (this.isKw('yield')) this.yieldExpr();
        else this.starExpressions();
      }
      if (target.kind === 'name')
        this.bind({ name: target.name!, line: t.line, column: t.col, kind: 'assign' });
      return;
    }
    const aug = ['+=', '-=', '*=', '/=', '//=', '%=', '@=', '&=', '|=', '^=', '>>=', '<<=', '**='];
    if (this.cur().type === 'op' && aug.includes(this.t.value)) {
      if (first.kind !== 'name' && first.kind !== 'attr' && first.kind !== 'subscript') {
        this.fail(
          this.tokenAt(first),
          `'${describe(first)}' is an illegal expression for augmented assignment`,
        );
      }
      if (first.parens && first.kind !== 'name')
        this.fail(
          this.tokenAt(first),
          `'${describe(first)}' is an illegal expression for augmented assignment`,
        );
      this.p += 1;
      if (this.isKw('yield')) this.yieldExpr();
      else this.starExpressions();
      return;
    }
    if (this.isOp('=')) {
      const targets = [first];
      let value = first;
      while (this.acceptOp('=')) {
        value = this.isKw('yield') ? this.yieldExpr() : this.starExpressions();
        targets.push(value);
      }
      targets.pop();
      for (const target of targets) {
        this.checkTarget(target, 'assign');
        for (const n of namesOf(target)) {
          this.bind({
            name: n,
            line: target.line,
            column: target.col,
            kind: 'assign',
            calls: value.kind === 'call' ? value.name : undefined,
            keywords: value.kind === 'call' ? value.keywords : undefined,
          });
        }
      }
      return;
    }
    if (first.kind === 'starred' && !first.parens)
      this.fail(this.tokenAt(first), "can't use starred expression here");
  }

  private atStmtEnd(): boolean {
    return this.cur().type === 'newline' || this.isOp(';');
  }

  private tokenAt(e: Expr): Token {
    return { type: 'op', value: '', line: e.line, col: e.col };
  }

  private dottedName(): string {
    let s = this.name().value;
    while (this.acceptOp('.')) s += '.' + this.name().value;
    return s;
  }

  private fromImport(): void {
    const start = this.t;
    this.p += 1;
    let dots = 0;
    while (this.isOp('.') || this.isOp('...')) {
      dots += this.t.value.length;
      this.p += 1;
    }
    if (!this.isKw('import')) this.dottedName();
    else if (dots === 0) this.fail();
    this.expectKw('import');
    if (this.acceptOp('*')) {
      this.bind({ name: '*', line: start.line, column: start.col, kind: 'import' });
      return;
    }
    const paren = this.acceptOp('(');
    for (;;) {
      let bound = this.name().value;
      if (this.acceptKw('as')) bound = this.name().value;
      this.bind({ name: bound, line: start.line, column: start.col, kind: 'import' });
      if (!this.acceptOp(',')) break;
      if (paren && this.isOp(')')) break;
      if (!paren && this.atStmtEnd())
        this.fail(this.t, 'trailing comma not allowed without surrounding parentheses');
    }
    if (paren) this.expectOp(')');
  }

  private block(): void {
    this.expectOp(':');
    if (this.cur().type === 'newline') {
      const nl = this.t;
      this.p += 1;
      if (this.cur().type !== 'indent')
        this.fail(this.cur().type === 'end' ? nl : this.t, `expected an indented block`);
      this.p += 1;
      while (this.cur().type !== 'dedent' && this.cur().type !== 'end') {
        if (this.cur().type === 'newline') {
          this.p += 1;
          continue;
        }
        this.statement();
      }
      if (this.cur().type === 'dedent') this.p += 1;
      return;
    }
    this.simpleStmts();
  }

  private withScope<T>(scope: Scope, fn: () => T): T {
    const saved = this.scope;
    this.scope = scope;
    try {
      return fn();
    } finally {
      this.scope = saved;
    }
  }

  private decorated(): void {
    while (this.acceptOp('@')) {
      this.namedExpression();
      if (this.cur().type !== 'newline') this.fail();
      this.p += 1;
    }
    if (this.isKw('def')) return this.funcDef(true);
    if (this.isKw('async') && this.isKw('def', this.peek())) {
      this.p += 1;
      return this.funcDef(true);
    }
    if (this.isKw('class')) return this.classDef();
    this.fail();
  }

  private funcDef(decorated: boolean): void {
    const start = this.t;
    this.expectKw('def');
    const nameTok = this.name();
    this.expectOp('(', "expected '('");
    const info = this.parameters(')', true);
    this.expectOp(')');
    if (this.acceptOp('->')) this.expression();
    const fn: FunctionInfo = { name: nameTok.value, line: start.line, column: start.col, ...info, decorated };
    if (this.scope.cls && !this.scope.func) this.scope.cls.methods.set(fn.name, fn);
    this.bind({ name: fn.name, line: start.line, column: start.col, kind: 'def' });
    this.withScope({ func: true, moduleLevel: false }, () => this.block());
  }

  private classDef(): void {
    const start = this.t;
    this.expectKw('class');
    const nameTok = this.name();
    let bases = 0;
    if (this.acceptOp('(')) {
      bases = this.callArguments().positional;
      this.expectOp(')');
    }
    const cls: ClassInfo = {
      name: nameTok.value,
      line: start.line,
      column: start.col,
      bases,
      methods: new Map(),
    };
    this.bind({ name: cls.name, line: start.line, column: start.col, kind: 'class', cls });
    this.withScope({ func: false, cls, moduleLevel: false }, () => this.block());
  }

  private ifStmt(): void {
    this.p += 1;
    this.namedExpression();
    this.block();
    while (this.isKw('elif')) {
      this.p += 1;
      this.namedExpression();
      this.block();
    }
    if (this.acceptKw('else')) this.block();
  }

  private whileStmt(): void {
    this.p += 1;
    this.namedExpression();
    this.block();
    if (this.acceptKw('else')) this.block();
  }

  private forStmt(): void {
    this.p += 1;
    const target = this.starTargets();
    this.expectKw('in');
    this.starExpressions();
    this.block();
    if (this.acceptKw('else')) this.block();
    for (const n of namesOf(target))
      this.bind({ name: n, line: target.line, column: target.col, kind: 'assign' });
  }

  private withStmt(): void {
    this.p += 1;
    if (this.isOp('(')) {
      // Python 3.9+: parenthesized with-items, if the parenthesis closes right before ':'.
      const save = this.p;
      try {
        this.p += 1;
        do {
          if (this.isOp(')')) break;
          this.withItem();
        } while (this.acceptOp(','));
        this.expectOp(')');
        if (!this.isOp(':')) throw new SyntaxFail(0, 0, 'retry');
        this.block();
        return;
      } catch (err) {
        if (!(err instanceof SyntaxFail)) throw err;
        if (this.p > save && err.line !== 0 && this.pastColon(save)) throw err;
        this.p = save;
      }
    }
    do this.withItem();
    while (this.acceptOp(','));
    this.block();
  }

  /** Whether the failed attempt got past the ':' that ends the header (its error is then real). */
  private pastColon(save: number): boolean {
    let depth = 0;
    for (let k = save; k < this.p && k < this.toks.length; k++) {
      const tok = this.toks[k];
      if (tok.type === 'op' && '([{'.includes(tok.value)) depth += 1;
      else if (tok.type === 'op' && ')]}'.includes(tok.value)) depth -= 1;
      else if (depth === 0 && tok.type === 'op' && tok.value === ':') return true;
    }
    return false;
  }

  private withItem(): void {
    this.expression();
    if (this.acceptKw('as')) {
      const target = this.starTarget();
      this.checkTarget(target, 'assign');
    }
  }

  private tryStmt(): void {
    this.p += 1;
    this.block();
    let handlers = 0;
    let star: boolean | undefined;
    while (this.isKw('except')) {
      const tok = this.t;
      this.p += 1;
      const isStar = this.acceptOp('*');
      if (star !== undefined && star !== isStar)
        this.fail(tok, "cannot have both 'except' and 'except*' on the same 'try'");
      star = isStar;
      if (!this.isOp(':')) {
        this.expression();
        if (this.isOp(',')) {
          this.fail(this.t, 'multiple exception types must be parenthesized');
        }
        if (this.acceptKw('as')) this.name();
      } else if (isStar) this.fail(this.t, 'expected one or more exception types');
      this.block();
      handlers += 1;
    }
    if (handlers > 0 && this.acceptKw('else')) this.block();
    if (this.acceptKw('finally')) this.block();
    else if (handlers === 0) this.fail(this.t, "expected 'except' or 'finally' block");
  }

  // ---- match

  private tryMatch(): boolean {
    const save = this.p;
    const start = this.t;
    this.p += 1;
    // `match` is a soft keyword: it is a statement only if a subject and ':' NEWLINE follow.
    try {
      if (this.isOp('*')) {
        this.starExpressions();
      } else {
        this.namedExpression();
        if (this.acceptOp(',')) {
          while (!this.isOp(':') && this.cur().type !== 'newline') {
            this.starNamedExpression();
            if (!this.acceptOp(',')) break;
          }
        }
      }
      if (!this.isOp(':') || this.peek().type !== 'newline') throw new SyntaxFail(0, 0, 'retry');
    } catch (err) {
      if (!(err instanceof SyntaxFail)) throw err;
      this.p = save;
      return false;
    }
    this.p += 2; // ':' NEWLINE
    if (this.cur().type !== 'indent')
      this.fail(this.t, `expected an indented block after 'match' statement on line ${start.line}`);
    this.p += 1;
    let cases = 0;
    while (this.cur().type !== 'dedent' && this.cur().type !== 'end') {
      if (!this.isKw('case')) this.fail();
      this.p += 1;
      this.patterns();
      if (this.acceptKw('if')) this.namedExpression();
      this.block();
      cases += 1;
    }
    if (cases === 0) this.fail();
    if (this.cur().type === 'dedent') this.p += 1;
    return true;
  }

  private patterns(): void {
    if (this.isOp('*')) {
      this.openSequencePattern();
      return;
    }
    this.asPattern();
    if (this.isOp(',')) {
      while (this.acceptOp(',')) {
        if (this.isOp(':') || this.isKw('if')) break;
        this.maybeStarPattern();
      }
    }
  }

  private openSequencePattern(): void {
    do {
      if (this.isOp(':') || this.isKw('if')) break;
      this.maybeStarPattern();
    } while (this.acceptOp(','));
  }

  private maybeStarPattern(): void {
    if (this.acceptOp('*')) {
      this.name();
      return;
    }
    this.asPattern();
  }

  private asPattern(): void {
    this.orPattern();
    if (this.acceptKw('as')) {
      const n = this.name();
      if (n.value === '_') this.fail(n, "cannot use '_' as a target");
    }
  }

  private orPattern(): void {
    do this.closedPattern();
    while (this.acceptOp('|'));
  }

  private closedPattern(): void {
    const t = this.t;
    if (t.type === 'number' || (this.isOp('-') && this.peek().type === 'number')) {
      this.signedNumber();
      if (this.isOp('+') || this.isOp('-')) {
        this.p += 1;
        if (this.cur().type !== 'number') this.fail();
        this.p += 1;
      }
      return;
    }
    if (t.type === 'string') {
      this.strings();
      return;
    }
    if (this.isKw('None') || this.isKw('True') || this.isKw('False')) {
      this.p += 1;
      return;
    }
    if (t.type === 'name' && !KEYWORDS.has(t.value)) {
      // A capture name, a dotted value, or a class pattern.
      this.p += 1;
      while (this.acceptOp('.')) this.name();
      if (this.acceptOp('(')) this.classPatternArgs();
      return;
    }
    if (this.acceptOp('(')) {
      if (this.acceptOp(')')) return;
      this.maybeStarPattern();
      while (this.acceptOp(',')) {
        if (this.isOp(')')) break;
        this.maybeStarPattern();
      }
      this.expectOp(')');
      return;
    }
    if (this.acceptOp('[')) {
      if (this.acceptOp(']')) return;
      this.maybeStarPattern();
      while (this.acceptOp(',')) {
        if (this.isOp(']')) break;
        this.maybeStarPattern();
      }
      this.expectOp(']');
      return;
    }
    if (this.acceptOp('{')) {
      while (!this.isOp('}')) {
        if (this.acceptOp('**')) {
          this.name();
        } else {
          if (this.cur().type === 'string') this.strings();
          else if (this.cur().type === 'number' || this.isOp('-')) {
            this.signedNumber();
            if (this.isOp('+') || this.isOp('-')) {
              this.p += 1;
              if (this.cur().type !== 'number') this.fail();
              this.p += 1;
            }
          } else if (this.isKw('None') || this.isKw('True') || this.isKw('False')) this.p += 1;
          else {
            this.name();
            if (!this.isOp('.')) this.fail();
            while (this.acceptOp('.')) this.name();
          }
          this.expectOp(':');
          this.asPattern();
        }
        if (!this.acceptOp(',')) break;
      }
      this.expectOp('}');
      return;
    }
    this.fail();
  }

  private signedNumber(): void {
    this.acceptOp('-');
    if (this.cur().type !== 'number') this.fail();
    this.p += 1;
  }

  private classPatternArgs(): void {
    let keyword = false;
    while (!this.isOp(')')) {
      if (this.cur().type === 'name' && this.isOp('=', this.peek())) {
        this.p += 2;
        this.asPattern();
        keyword = true;
      } else {
        if (keyword) this.fail(this.t, 'positional patterns follow keyword patterns');
        this.asPattern();
      }
      if (!this.acceptOp(',')) break;
    }
    this.expectOp(')');
  }

  // ---- parameters and arguments

  private parameters(
    close: string,
    annotations: boolean,
  ): { positional: string[]; defaults: number; varargs: boolean } {
    const positional: string[] = [];
    let defaults = 0;
    let varargs = false;
    let sawStar = false;
    let sawKwargs = false;
    let sawSlash = false;
    let sawDefault = false;
    while (!this.isOp(close)) {
      if (sawKwargs) this.fail(this.t, 'arguments cannot follow var-keyword argument');
      if (this.isOp('/')) {
        if (sawSlash) this.fail(this.t, '/ may appear only once');
        if (sawStar) this.fail(this.t, '/ must be ahead of *');
        if (positional.length === 0) this.fail(this.t, 'at least one argument must precede /');
        sawSlash = true;
        this.p += 1;
      } else if (this.isOp('*')) {
        if (sawStar) this.fail(this.t, '* argument may appear only once');
        const star = this.t;
        this.p += 1;
        sawStar = true;
        if (this.isOp(',') || this.isOp(close)) {
          if (this.isOp(close) || (this.isOp(',') && this.isOp(close, this.peek())))
            this.fail(star, 'named arguments must follow bare *');
        } else {
          this.name();
          varargs = true;
          if (annotations && this.acceptOp(':')) {
            if (this.isOp('*')) {
              this.p += 1;
              this.bitwiseOr();
            } else this.expression();
          }
        }
      } else if (this.isOp('**')) {
        this.p += 1;
        this.name();
        if (annotations && this.acceptOp(':')) this.expression();
        sawKwargs = true;
      } else {
        const n = this.name();
        if (annotations && this.acceptOp(':')) this.expression();
        if (this.acceptOp('=')) {
          this.expression();
          if (!sawStar) {
            defaults += 1;
            sawDefault = true;
          }
        } else if (sawDefault && !sawStar) {
          this.fail(n, 'non-default argument follows default argument');
        }
        if (!sawStar) positional.push(n.value);
      }
      if (!this.acceptOp(',')) break;
    }
    return { positional, defaults, varargs };
  }

  /** Call arguments, after '(' and up to ')'. */
  private callArguments(): { positional: number; keywords: string[] } {
    let positional = 0;
    const keywords: string[] = [];
    let sawKeyword = false;
    let sawDoubleStar = false;
    let count = 0;
    while (!this.isOp(')')) {
      const t = this.t;
      if (this.acceptOp('**')) {
        this.expression();
        sawDoubleStar = true;
      } else if (this.acceptOp('*')) {
        if (sawDoubleStar) this.fail(t, 'iterable argument unpacking follows keyword argument unpacking');
        this.expression();
        positional += 1;
      } else if (t.type === 'name' && this.isOp('=', this.peek())) {
        if (KEYWORDS.has(t.value))
          this.fail(
            t,
            t.value === 'True' || t.value === 'False' || t.value === 'None'
              ? `cannot assign to ${t.value}`
              : 'invalid syntax',
          );
        this.p += 2;
        this.expression();
        keywords.push(t.value);
        sawKeyword = true;
      } else {
        const e = this.namedExpression();
        if (this.isOp('='))
          this.fail(this.t, 'expression cannot contain assignment, perhaps you meant "=="?');
        if (this.isKw('for') || (this.isKw('async') && this.isKw('for', this.peek()))) {
          this.comprehension();
          if (count > 0 || this.isOp(','))
            this.fail(this.tokenAt(e), 'Generator expression must be parenthesized');
        }
        if (sawDoubleStar)
          this.fail(this.tokenAt(e), 'positional argument follows keyword argument unpacking');
        if (sawKeyword) this.fail(this.tokenAt(e), 'positional argument follows keyword argument');
        positional += 1;
      }
      count += 1;
      if (!this.acceptOp(',')) break;
    }
    return { positional, keywords };
  }

  // ---- expressions

  private starExpressions(): Expr {
    const first = this.starExpression();
    if (!this.isOp(',')) return first;
    const elts = [first];
    while (this.acceptOp(',')) {
      if (this.atExprEnd()) break;
      elts.push(this.starExpression());
    }
    return { kind: 'tuple', line: first.line, col: first.col, elts };
  }

  private atExprEnd(): boolean {
    const t = this.t;
    if (t.type === 'newline' || t.type === 'end') return true;
    if (t.type === 'op' && [')', ']', '}', '=', ';', ':'].includes(t.value)) return true;
    if (
      t.type === 'op' &&
      t.value.endsWith('=') &&
      t.value.length >= 2 &&
      !['==', '!=', '<=', '>='].includes(t.value)
    )
      return true;
    if (this.isKw('in') || this.isKw('for') || this.isKw('async') || this.isKw('if')) return true;
    return false;
  }

  private starExpression(): Expr {
    if (this.isOp('*')) {
      const t = this.t;
      this.p += 1;
      const inner = this.bitwiseOr();
      return { kind: 'starred', line: t.line, col: t.col, inner };
    }
    return this.expression();
  }

  private starNamedExpression(): Expr {
    if (this.isOp('*')) {
      const t = this.t;
      this.p += 1;
      const inner = this.bitwiseOr();
      return { kind: 'starred', line: t.line, col: t.col, inner };
    }
    return this.namedExpression();
  }

  private namedExpression(): Expr {
    const t = this.t;
    const e = this.expression();
    if (this.isOp(':=')) {
      if (e.kind !== 'name' || e.parens)
        this.fail(t, `cannot use assignment expressions with ${describe(e)}`);
      this.p += 1;
      this.expression();
      return { kind: 'other', line: t.line, col: t.col, what: 'named expression' };
    }
    return e;
  }

  private expression(): Expr {
    if (this.isKw('lambda')) return this.lambda();
    const t = this.t;
    const e = this.disjunction();
    if (this.isKw('if')) {
      this.p += 1;
      this.disjunction();
      if (!this.isKw('else')) this.fail(this.t, "expected 'else' after 'if' expression");
      this.p += 1;
      this.expression();
      return { kind: 'other', line: t.line, col: t.col, what: 'conditional expression' };
    }
    return e;
  }

  private lambda(): Expr {
    const t = this.t;
    this.p += 1;
    this.parameters(':', false);
    this.expectOp(':');
    this.expression();
    return { kind: 'other', line: t.line, col: t.col, what: 'lambda' };
  }

  private disjunction(): Expr {
    const e = this.conjunction();
    if (!this.isKw('or')) return e;
    while (this.acceptKw('or')) this.conjunction();
    return { kind: 'op', line: e.line, col: e.col, what: 'expression' };
  }

  private conjunction(): Expr {
    const e = this.inversion();
    if (!this.isKw('and')) return e;
    while (this.acceptKw('and')) this.inversion();
    return { kind: 'op', line: e.line, col: e.col, what: 'expression' };
  }

  private inversion(): Expr {
    if (this.isKw('not')) {
      const t = this.t;
      this.p += 1;
      this.inversion();
      return { kind: 'op', line: t.line, col: t.col, what: 'expression' };
    }
    return this.comparison();
  }

  private comparison(): Expr {
    const e = this.bitwiseOr();
    let compared = false;
    for (;;) {
      const t = this.t;
      if (t.type === 'op' && ['==', '!=', '<', '<=', '>', '>='].includes(t.value)) this.p += 1;
      else if (this.isKw('in')) this.p += 1;
      else if (this.isKw('not') && this.isKw('in', this.peek())) this.p += 2;
      else if (this.isKw('is')) {
        this.p += 1;
        this.acceptKw('not');
      } else break;
      this.bitwiseOr();
      compared = true;
    }
    return compared ? { kind: 'compare', line: e.line, col: e.col, what: 'comparison' } : e;
  }

  private binary(ops: string[], next: () => Expr): Expr {
    const e = next();
    if (!(this.cur().type === 'op' && ops.includes(this.t.value))) return e;
    while (this.cur().type === 'op' && ops.includes(this.t.value)) {
      this.p += 1;
      next();
    }
    return { kind: 'op', line: e.line, col: e.col, what: 'expression' };
  }

  private bitwiseOr(): Expr {
    return this.binary(['|'], () => this.bitwiseXor());
  }
  private bitwiseXor(): Expr {
    return this.binary(['^'], () => this.bitwiseAnd());
  }
  private bitwiseAnd(): Expr {
    return this.binary(['&'], () => this.shift());
  }
  private shift(): Expr {
    return this.binary(['<<', '>>'], () => this.sum());
  }
  private sum(): Expr {
    return this.binary(['+', '-'], () => this.term());
  }
  private term(): Expr {
    return this.binary(['*', '/', '//', '%', '@'], () => this.factor());
  }

  private factor(): Expr {
    if (this.isOp('+') || this.isOp('-') || this.isOp('~')) {
      const t = this.t;
      this.p += 1;
      this.factor();
      return { kind: 'op', line: t.line, col: t.col, what: 'expression' };
    }
    return this.power();
  }

  private power(): Expr {
    const t = this.t;
    let e: Expr;
    if (this.isKw('await')) {
      this.p += 1;
      this.primary();
      e = { kind: 'other', line: t.line, col: t.col, what: 'await expression' };
    } else e = this.primary();
    if (this.acceptOp('**')) {
      this.factor();
      return { kind: 'op', line: t.line, col: t.col, what: 'expression' };
    }
    return e;
  }

  private primary(): Expr {
    let e = this.atom();
    for (;;) {
      if (this.isOp('.')) {
        this.p += 1;
        const n = this.name();
        e = { kind: 'attr', line: e.line, col: e.col, name: n.value, what: 'attribute' };
      } else if (this.isOp('(')) {
        this.p += 1;
        const args = this.callArguments();
        this.expectOp(')');
        e = {
          kind: 'call',
          line: e.line,
          col: e.col,
          name: e.kind === 'name' || e.kind === 'attr' ? e.name : undefined,
          keywords: args.keywords,
          what: 'function call',
        };
      } else if (this.isOp('[')) {
        this.p += 1;
        this.slices();
        this.expectOp(']');
        e = { kind: 'subscript', line: e.line, col: e.col, what: 'subscript' };
      } else break;
    }
    return e;
  }

  private slices(): void {
    if (this.isOp(']')) this.fail();
    do {
      if (this.isOp(']')) break;
      this.slice();
    } while (this.acceptOp(','));
  }

  private slice(): void {
    if (this.isOp('*')) {
      this.p += 1;
      this.bitwiseOr();
      return;
    }
    if (!this.isOp(':')) {
      this.namedExpression();
      if (!this.isOp(':')) return;
    }
    this.expectOp(':');
    if (!this.isOp(':') && !this.isOp(',') && !this.isOp(']')) this.expression();
    if (this.acceptOp(':')) {
      if (!this.isOp(',') && !this.isOp(']')) this.expression();
    }
  }

  private strings(): Expr {
    const first = this.t;
    let bytes: boolean | undefined;
    while (this.cur().type === 'string') {
      const s = this.t;
      const isBytes = s.prefix!.includes('b');
      if (bytes !== undefined && bytes !== isBytes)
        this.fail(first, 'cannot mix bytes and nonbytes literals');
      bytes = isBytes;
      if (s.prefix!.includes('f')) checkFString(s);
      this.p += 1;
    }
    return { kind: 'literal', line: first.line, col: first.col, what: 'literal' };
  }

  private atom(): Expr {
    const t = this.t;
    if (t.type === 'name') {
      if (t.value === 'True' || t.value === 'False' || t.value === 'None') {
        this.p += 1;
        return { kind: 'literal', line: t.line, col: t.col, what: t.value, name: t.value };
      }
      if (KEYWORDS.has(t.value)) this.fail(t);
      this.p += 1;
      return { kind: 'name', line: t.line, col: t.col, name: t.value, what: 'name' };
    }
    if (t.type === 'number') {
      this.p += 1;
      return { kind: 'literal', line: t.line, col: t.col, what: 'literal' };
    }
    if (t.type === 'string') return this.strings();
    if (this.isOp('...')) {
      this.p += 1;
      return { kind: 'literal', line: t.line, col: t.col, what: 'ellipsis' };
    }
    if (this.isOp('(')) {
      this.p += 1;
      if (this.acceptOp(')'))
        return { kind: 'tuple', line: t.line, col: t.col, elts: [], parens: true, what: 'tuple' };
      if (this.isKw('yield')) {
        this.yieldExpr();
        this.expectOp(')');
        return { kind: 'other', line: t.line, col: t.col, what: 'yield expression', parens: true };
      }
      const first = this.starNamedExpression();
      if (this.isKw('for') || (this.isKw('async') && this.isKw('for', this.peek()))) {
        if (first.kind === 'starred')
          this.fail(this.tokenAt(first), 'iterable unpacking cannot be used in comprehension');
        this.comprehension();
        this.expectOp(')');
        return { kind: 'other', line: t.line, col: t.col, what: 'generator expression', parens: true };
      }
      if (this.isOp(')')) {
        this.p += 1;
        if (first.kind === 'starred') this.fail(this.tokenAt(first), 'cannot use starred expression here');
        return { ...first, parens: true };
      }
      const elts = [first];
      while (this.acceptOp(',')) {
        if (this.isOp(')')) break;
        elts.push(this.starNamedExpression());
      }
      this.expectOp(')');
      return { kind: 'tuple', line: t.line, col: t.col, elts, parens: true, what: 'tuple' };
    }
    if (this.isOp('[')) {
      this.p += 1;
      const elts: Expr[] = [];
      if (!this.isOp(']')) {
        const first = this.starNamedExpression();
        elts.push(first);
        if (this.isKw('for') || (this.isKw('async') && this.isKw('for', this.peek()))) {
          if (first.kind === 'starred')
            this.fail(this.tokenAt(first), 'iterable unpacking cannot be used in comprehension');
          this.comprehension();
          this.expectOp(']');
          return { kind: 'other', line: t.line, col: t.col, what: 'list comprehension' };
        }
        while (this.acceptOp(',')) {
          if (this.isOp(']')) break;
          elts.push(this.starNamedExpression());
        }
      }
      this.expectOp(']');
      return { kind: 'list', line: t.line, col: t.col, elts, what: 'list' };
    }
    if (this.isOp('{')) {
      this.p += 1;
      if (this.acceptOp('}')) return { kind: 'other', line: t.line, col: t.col, what: 'dict literal' };
      let dict: boolean;
      if (this.acceptOp('**')) {
        this.bitwiseOr();
        dict = true;
      } else {
        const first = this.starNamedExpression();
        if (first.kind !== 'starred' && this.acceptOp(':')) {
          this.expression();
          dict = true;
        } else dict = false;
      }
      if (this.isKw('for') || (this.isKw('async') && this.isKw('for', this.peek()))) {
        this.comprehension();
        this.expectOp('}');
        return {
          kind: 'other',
          line: t.line,
          col: t.col,
          what: dict ? 'dict comprehension' : 'set comprehension',
        };
      }
      while (this.acceptOp(',')) {
        if (this.isOp('}')) break;
        if (dict) {
          if (this.acceptOp('**')) this.bitwiseOr();
          else {
            this.expression();
            this.expectOp(':', "':' expected after dictionary key");
            this.expression();
          }
        } else this.starNamedExpression();
      }
      this.expectOp('}');
      return { kind: 'other', line: t.line, col: t.col, what: dict ? 'dict literal' : 'set display' };
    }
    if (this.isKw('yield')) this.fail(t);
    this.fail(t);
  }

  private comprehension(): void {
    while (this.isKw('for') || (this.isKw('async') && this.isKw('for', this.peek()))) {
      this.acceptKw('async');
      this.p += 1;
      this.starTargets();
      this.expectKw('in');
      this.disjunction();
      while (this.acceptKw('if')) this.disjunction();
    }
  }

  private yieldExpr(): Expr {
    const t = this.t;
    this.expectKw('yield');
    if (this.acceptKw('from')) this.expression();
    else if (!(
      this.cur().type === 'newline' ||
      this.cur().type === 'end' ||
      (this.cur().type === 'op' && [')', ']', '}', '=', ';'].includes(this.t.value))
    ))
      this.starExpressions();
    return { kind: 'other', line: t.line, col: t.col, what: 'yield expression' };
  }

  /** for-loop and comprehension targets: an expression list checked as assignment targets. */
  private starTargets(): Expr {
    const first = this.starTarget();
    let e = first;
    if (this.isOp(',')) {
      const elts = [first];
      while (this.acceptOp(',')) {
        if (this.isKw('in') || this.isOp('=')) break;
        elts.push(this.starTarget());
      }
      e = { kind: 'tuple', line: first.line, col: first.col, elts };
    }
    this.checkTarget(e, 'assign');
    return e;
  }

  private starTarget(): Expr {
    if (this.isOp('*')) {
      const t = this.t;
      this.p += 1;
      const inner = this.starTarget();
      return { kind: 'starred', line: t.line, col: t.col, inner };
    }
    // A target is a primary (name, attribute, subscript) or a bracketed list of targets; parse a
    // bitwise_or so that `for x in y` stops before `in`.
    return this.bitwiseOr();
  }

  private checkTarget(e: Expr, mode: 'assign' | 'delete'): void {
    switch (e.kind) {
      case 'name':
      case 'attr':
      case 'subscript':
        return;
      case 'starred':
        if (mode === 'delete') this.fail(this.tokenAt(e), 'cannot delete starred');
        this.checkTarget(e.inner!, mode);
        return;
      case 'tuple':
      case 'list':
        for (const x of e.elts ?? []) this.checkTarget(x, mode);
        return;
      default: {
        const verb = mode === 'delete' ? 'delete' : 'assign to';
        this.fail(
          this.tokenAt(e),
          e.kind === 'literal' && ['True', 'False', 'None', 'ellipsis'].includes(e.what ?? '')
            ? `cannot ${verb} ${e.what === 'ellipsis' ? 'ellipsis' : e.what}`
            : `cannot ${verb} ${describe(e)}${mode === 'assign' && e.kind !== 'call' ? " here. Maybe you meant '==' instead of '='?" : ''}`,
        );
      }
    }
  }
}

function describe(e: Expr): string {
  return e.what ?? e.kind;
}

function namesOf(e: Expr): string[] {
  if (e.kind === 'name') return [e.name!];
  if (e.kind === 'starred') return namesOf(e.inner!);
  if (e.kind === 'tuple' || e.kind === 'list') return (e.elts ?? []).flatMap(namesOf);
  return [];
}

/** Checks the replacement fields of an f-string body (Python 3.11 rules). */
function checkFString(tok: Token): void {
  const body = tok.body!;
  const raw = tok.prefix!.includes('r');
  const at = (message: string): never => {
    throw new SyntaxFail(tok.line, tok.col, `f-string: ${message}`);
  };
  const scanFields = (s: string, depth: number): void => {
    let k = 0;
    while (k < s.length) {
      const c = s[k];
      if (c === '{') {
        if (s[k + 1] === '{' && depth === 0) {
          k += 2;
          continue;
        }
        k = field(s, k + 1, depth);
        continue;
      }
      if (c === '}') {
        if (s[k + 1] === '}' && depth === 0) {
          k += 2;
          continue;
        }
        at("single '}' is not allowed");
      }
      if (c === '\\' && !raw && s[k + 1] === 'N' && s[k + 2] === '{') {
        // \N{NAME}: a named character, not a replacement field.
        const close = s.indexOf('}', k + 3);
        k = close === -1 ? s.length : close + 1;
        continue;
      }
      k += 1;
    }
  };
  /** Reads one replacement field starting after '{'; returns the index after its '}'. */
  const field = (s: string, start: number, depth: number): number => {
    if (depth >= 2) at('expressions nested too deeply');
    let k = start;
    const stack: string[] = [];
    let quote: string | null = null;
    for (; k < s.length; k++) {
      const c = s[k];
      if (c === '\\') at('expression part cannot include a backslash');
      if (quote) {
        if (s.startsWith(quote, k)) {
          k += quote.length - 1;
          quote = null;
        }
        continue;
      }
      if (c === "'" || c === '"') {
        quote = s.startsWith(c.repeat(3), k) ? c.repeat(3) : c;
        k += quote.length - 1;
        continue;
      }
      if (c === '#') at("expression part cannot include '#'");
      if ('([{'.includes(c)) stack.push(c);
      else if (')]}'.includes(c)) {
        if (stack.length === 0) {
          if (c === '}') break;
          at(`unmatched '${c}'`);
        }
        stack.pop();
      } else if (stack.length === 0) {
        if (c === '!' && s[k + 1] !== '=') break;
        if (c === ':') break;
        if (c === '=' && s[k + 1] !== '=' && !'=!<>'.includes(s[k - 1] ?? '')) {
          // Self-documenting `{expr=}`: only whitespace may follow before '!', ':' or '}'.
          const after = s.slice(k + 1).match(/^\s*/)![0].length + k + 1;
          if (s[after] === '}' || s[after] === '!' || s[after] === ':') {
            parseExpr(s.slice(start, k));
            k = after;
            return tail(s, k, depth);
          }
        }
      }
    }
    if (quote) at('unterminated string');
    if (k >= s.length) at("expecting '}'");
    parseExpr(s.slice(start, k));
    return tail(s, k, depth);
  };
  const tail = (s: string, k: number, depth: number): number => {
    if (s[k] === '!') {
      const conv = s[k + 1];
      if (!conv || !'sra'.includes(conv)) at("invalid conversion character: expected 's', 'r', or 'a'");
      k += 2;
    }
    if (s[k] === ':') {
      // The format spec: literal text with nested replacement fields, up to the matching '}'.
      k += 1;
      for (; k < s.length; k++) {
        if (s[k] === '{') {
          k = field(s, k + 1, depth + 1) - 1;
          continue;
        }
        if (s[k] === '}') break;
      }
    }
    if (s[k] !== '}') at("expecting '}'");
    return k + 1;
  };
  const parseExpr = (text: string): void => {
    if (text.trim() === '') at('empty expression not allowed');
    let toks: Token[];
    try {
      toks = tokenize(`(${text})`, { inner: true });
    } catch (err) {
      if (err instanceof SyntaxFail) at(err.message);
      throw err;
    }
    for (const x of toks) {
      x.line = tok.line;
      x.col = tok.col;
    }
    const parser = new Parser(toks);
    try {
      parser.fstringExpression();
    } catch (err) {
      if (err instanceof SyntaxFail) at(err.message === 'invalid syntax' ? 'invalid syntax' : err.message);
      throw err;
    }
  };
  scanFields(body, 0);
}

/** Parses a module. Never throws on bad input: a syntax error comes back in `error`. */
export function parsePython(source: string): PythonModule {
  const text = source.startsWith('\ufeff') ? source.slice(1) : source;
  if (text.includes('\u0000'))
    return {
      ok: false,
      error: {
        line: lineOf(text, text.indexOf('\u0000')),
        column: 1,
        message: 'source code cannot contain null bytes',
      },
      bindings: [],
    };
  try {
    const toks = tokenize(text);
    const parser = new Parser(toks);
    try {
      parser.parseFile();
    } catch (err) {
      // As CPython does: a generic error on a later line than a bracket still open at that point
      // is reported as that bracket.
      if (err instanceof SyntaxFail && err.message === 'invalid syntax') {
        const open: Token[] = [];
        for (let k = 0; k < parser.position && k < toks.length; k++) {
          const tok = toks[k];
          if (tok.type !== 'op') continue;
          if ('([{'.includes(tok.value)) open.push(tok);
          else if (')]}'.includes(tok.value)) open.pop();
        }
        const inner = open[open.length - 1];
        if (inner && err.line > inner.line)
          throw new SyntaxFail(inner.line, inner.col, `'${inner.value}' was never closed`);
      }
      throw err;
    }
    return { ok: true, bindings: parser.bindings };
  } catch (err) {
    if (err instanceof SyntaxFail)
      return { ok: false, error: { line: err.line, column: err.col, message: err.message }, bindings: [] };
    if (err instanceof RangeError)
      return {
        ok: false,
        error: { line: 1, column: 1, message: 'too many nested expressions to parse' },
        bindings: [],
      };
    throw err;
  }
}

function lineOf(text: string, index: number): number {
  return text.slice(0, index).split('\n').length;
}

// ----------------------------------------------------------------------------- entry-point checks

export interface EntryPointProblem {
  line: number;
  column: number;
  message: string;
}

function arityProblem(fn: FunctionInfo, args: string[], call: string): string | null {
  if (fn.decorated) return null;
  const given = 1 + args.length; // self
  const required = fn.positional.length - fn.defaults;
  if (required > given || (fn.positional.length < given && !fn.varargs)) {
    const params = fn.positional.join(', ');
    return `${fn.name}(${params}) cannot be called as ${call}: it must take ${['self', ...args].join(', ')}`;
  }
  return null;
}

/** `engine.py` must export `class Engine` with `__init__(self, model_path)` and `generate(self, input_ids, max_new_tokens)`. */
export function checkEngineModule(mod: PythonModule): EntryPointProblem | null {
  const bound = mod.bindings.filter((b) => b.name === 'Engine' || b.name === '*');
  if (bound.length === 0)
    return {
      line: 1,
      column: 1,
      message:
        'engine.py does not define class Engine; it must export class Engine with __init__(self, model_path) and generate(self, input_ids, max_new_tokens).',
    };
  const last = bound[bound.length - 1];
  if (last.kind === 'def')
    return {
      line: last.line,
      column: last.column,
      message: 'Engine is a function here; engine.py must export class Engine.',
    };
  const cls = last.cls;
  if (!cls) return null; // imported or assigned: it is checked when it runs.
  const init = cls.methods.get('__init__');
  const gen = cls.methods.get('generate');
  const inherits = cls.bases > 0;
  if (!init && !inherits)
    return {
      line: cls.line,
      column: cls.column,
      message: 'class Engine has no __init__(self, model_path); the hub creates it as Engine(model_path).',
    };
  if (!gen && !inherits)
    return {
      line: cls.line,
      column: cls.column,
      message: 'class Engine has no generate(self, input_ids, max_new_tokens) method.',
    };
  if (init) {
    const p = arityProblem(init, ['model_path'], 'Engine(model_path)');
    if (p) return { line: init.line, column: init.column, message: p };
  }
  if (gen) {
    const p = arityProblem(
      gen,
      ['input_ids', 'max_new_tokens'],
      'engine.generate(input_ids, max_new_tokens)',
    );
    if (p) return { line: gen.line, column: gen.column, message: p };
  }
  return null;
}

/** `submission.py` must bind `SUBMISSION = Submission(...)` at module level. */
export function checkSubmissionModule(mod: PythonModule): EntryPointProblem | null {
  const bound = mod.bindings.filter((b) => b.name === 'SUBMISSION');
  if (bound.length === 0) {
    if (mod.bindings.some((b) => b.name === '*')) return null;
    return {
      line: 1,
      column: 1,
      message:
        'submission.py does not define SUBMISSION; end it with SUBMISSION = Submission(build_model=..., build_optimizer=...) (from benchmark import Submission).',
    };
  }
  const last = bound[bound.length - 1];
  if (last.kind === 'assign' && last.calls === 'Submission') {
    const kw = last.keywords ?? [];
    const missing = ['build_model', 'build_optimizer'].filter((k) => !kw.includes(k));
    // Positional arguments are allowed too; only flag a call with neither form.
    if (missing.length === 2 && kw.length > 0)
      return {
        line: last.line,
        column: last.column,
        message: `Submission(...) needs build_model and build_optimizer.`,
      };
  }
  return null;
}

/**
 * The escapes CPython refuses when it compiles a (non-raw) literal: a truncated \x, \u or \U, a
 * code point past U+10FFFF, a malformed \N{…} (str only: bytes keep \u, \U and \N as they are).
 * The name inside \N{…} is not looked up. `body` keeps each escape as its two characters.
 */
function escapeError(body: string, bytes: boolean): string | null {
  for (let k = 0; k < body.length; k++) {
    if (body[k] !== '\\') continue;
    const e = body[k + 1];
    const codec = (end: number, what: string) =>
      `(unicode error) 'unicodeescape' codec can't decode bytes in position ${k}-${end}: ${what}`;
    const digits = (n: number) => /^[0-9a-fA-F]*/.exec(body.slice(k + 2, k + 2 + n))![0].length;
    if (e === 'x') {
      const n = digits(2);
      if (n < 2)
        return bytes
          ? `(value error) invalid \\x escape at position ${k}`
          : codec(k + 1 + n, 'truncated \\xXX escape');
    } else if (!bytes && (e === 'u' || e === 'U')) {
      const want = e === 'u' ? 4 : 8;
      const n = digits(want);
      if (n < want)
        return codec(k + 1 + n, e === 'u' ? 'truncated \\uXXXX escape' : 'truncated \\UXXXXXXXX escape');
      if (e === 'U' && parseInt(body.slice(k + 2, k + 10), 16) > 0x10ffff)
        return codec(k + 9, 'illegal Unicode character');
    } else if (!bytes && e === 'N') {
      const name = /^\{[^}]*\}/.exec(body.slice(k + 2));
      if (!name || name[0].length === 2)
        return codec(
          body[k + 2] === '{' && !name ? body.length - 1 : k + 1,
          'malformed \\N character escape',
        );
    }
    k += 1;
  }
  return null;
}

// ------------------------------------------------------------------ what a submission.py may not use

/** Modules a single-file submission may not import: the network and other processes. */
const FORBIDDEN_MODULES = new Set([
  'socket',
  'ssl',
  'socketserver',
  'urllib',
  'urllib3',
  'http',
  'requests',
  'httpx',
  'aiohttp',
  'websocket',
  'websockets',
  'ftplib',
  'smtplib',
  'telnetlib',
  'xmlrpc',
  'subprocess',
  'pty',
]);
/** Attributes of a module that load weights, reach the network or start processes. */
const FORBIDDEN_ATTRIBUTES: Record<string, (name: string) => boolean> = {
  torch: (n) => n === 'load' || n === 'hub',
  os: (n) => n === 'system' || n === 'popen' || n.startsWith('exec') || n.startsWith('spawn'),
};

function forbiddenWhy(module: string, attribute?: string): string | null {
  const top = module.split('.')[0];
  if (attribute === undefined) {
    if (FORBIDDEN_MODULES.has(top))
      return top === 'subprocess' || top === 'pty'
        ? `${module} starts other processes, which the rules do not allow`
        : `${module} is a network module; the evaluator has no network and the rules do not allow one`;
    if (module === 'torch.hub')
      return 'torch.hub downloads weights; trainable weights must start from a random initialization';
    return null;
  }
  if (!FORBIDDEN_ATTRIBUTES[top]?.(attribute) || module !== top) return null;
  if (top === 'torch')
    return attribute === 'load'
      ? 'torch.load is not allowed: no hard-coded weights (trainable weights must use a random initialization and be updated during training)'
      : 'torch.hub downloads weights; trainable weights must start from a random initialization';
  return `os.${attribute} starts other processes, which the rules do not allow`;
}

/**
 * What a submission.py uses that the rules forbid and that can be seen without running it: imports
 * of network and process modules, `torch.load` / `torch.hub`, `os.system` and the like (as
 * `module.attr` or `from module import attr`). Names in strings and comments do not count; a use
 * through an alias is left to the evaluator's run-time checks. Valid Python only (parse first).
 */
export function forbiddenUses(source: string): EntryPointProblem[] {
  const text = source.startsWith('\ufeff') ? source.slice(1) : source;
  const toks = tokenize(text).filter((t) => t.type !== 'error');
  const out: EntryPointProblem[] = [];
  const flag = (tok: Token, why: string | null) => {
    if (why) out.push({ line: tok.line, column: tok.col, message: why });
  };
  const atStart = (k: number) => {
    const p = toks[k - 1];
    return (
      !p ||
      p.type === 'newline' ||
      p.type === 'indent' ||
      p.type === 'dedent' ||
      (p.type === 'op' && p.value === ';') ||
      (p.type === 'op' && p.value === ':')
    );
  };
  /** A dotted name starting at k: its text and the index after it. */
  const dotted = (k: number): [string, number] => {
    let name = '';
    while (toks[k]?.type === 'op' && toks[k].value === '.') {
      name += '.';
      k++;
    }
    while (toks[k]?.type === 'name') {
      name += toks[k].value;
      if (toks[k + 1]?.type === 'op' && toks[k + 1].value === '.' && toks[k + 2]?.type === 'name') {
        name += '.';
        k += 2;
      } else {
        k++;
        break;
      }
    }
    return [name, k];
  };
  for (let k = 0; k < toks.length; k++) {
    const t = toks[k];
    if (t.type !== 'name') continue;
    if (t.value === 'import' && atStart(k)) {
      let j = k + 1;
      for (;;) {
        const [name, next] = dotted(j);
        if (name) flag(toks[j], forbiddenWhy(name));
        j = next;
        if (toks[j]?.type === 'name' && toks[j].value === 'as') j += 2;
        if (toks[j]?.type === 'op' && toks[j].value === ',') j++;
        else break;
      }
      k = j - 1;
    } else if (t.value === 'from' && atStart(k)) {
      const [module, next] = dotted(k + 1);
      if (module.startsWith('.')) continue;
      const modWhy = forbiddenWhy(module);
      if (modWhy) {
        flag(toks[k + 1], modWhy);
        continue;
      }
      let j = next;
      if (toks[j]?.value !== 'import') continue;
      j++;
      if (toks[j]?.type === 'op' && toks[j].value === '(') j++;
      while (toks[j]?.type === 'name') {
        flag(toks[j], forbiddenWhy(module, toks[j].value) ?? forbiddenWhy(`${module}.${toks[j].value}`));
        j++;
        if (toks[j]?.type === 'name' && toks[j].value === 'as') j += 2;
        if (toks[j]?.type === 'op' && toks[j].value === ',') j++;
        else break;
      }
    } else if (
      FORBIDDEN_ATTRIBUTES[t.value] &&
      toks[k + 1]?.type === 'op' &&
      toks[k + 1].value === '.' &&
      toks[k + 2]?.type === 'name' &&
      !(toks[k - 1]?.type === 'op' && toks[k - 1].value === '.')
    ) {
      flag(t, forbiddenWhy(t.value, toks[k + 2].value));
    }
  }
  return out;
}
