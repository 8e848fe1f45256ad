import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { checkEngineModule, checkSubmissionModule, parsePython } from '../src/index';

const ROOT = path.resolve(__dirname, '../..');
const PYTHON = process.env.HARNESS_PYTHON ?? 'python3';

/** CPython 3.11's own verdict (ast.parse), the oracle for every case below. */
/** Whether CPython compiles each source (parsing and the compiler's own checks). */
function cpythonCompiles(sources: string[]): boolean[] {
  const script = `
import json, sys, warnings
warnings.simplefilter("ignore")
out = []
for src in json.load(sys.stdin):
    try:
        compile(src, "<mutant>", "exec", dont_inherit=True)
        out.append(True)
    except (SyntaxError, ValueError):
        out.append(False)
print(json.dumps(out))
`;
  const res = spawnSync(PYTHON, ['-c', script], { input: JSON.stringify(sources), encoding: 'utf8' });
  if (res.status !== 0) throw new Error(`${PYTHON} failed: ${res.stderr}`);
  return JSON.parse(res.stdout);
}

function cpython(sources: string[]): ({ line: number; column: number; message: string } | null)[] {
  const script = `
import ast, json, sys, warnings
warnings.simplefilter("ignore")
assert sys.version_info[:2] == (3, 11), sys.version
out = []
for src in json.load(sys.stdin):
    try:
        ast.parse(src)
        out.append(None)
    except SyntaxError as e:
        out.append({"line": e.lineno, "column": e.offset, "message": e.msg})
    except ValueError as e:  # null bytes
        out.append({"line": 1, "column": 1, "message": str(e)})
print(json.dumps(out))
`;
  const res = spawnSync(PYTHON, ['-c', script], { input: JSON.stringify(sources), encoding: 'utf8' });
  if (res.status !== 0) throw new Error(`${PYTHON} failed: ${res.stderr}`);
  return JSON.parse(res.stdout);
}

const VALID: Record<string, string> = {
  // a backslash inside the indentation (found by the mutation test): one at column 0 lets the next
  // line's spaces count; one after whitespace fixes the level whatever follows
  indent_continued_from_0: 'class A:\n    x = 1\n\\\n    y = 2\n',
  indent_continued_at_4: 'class A:\n    x = 1\n    \\\ny = 2\n',
  indent_continued_to_blank: 'class A:\n    x = 1\n\\\n\n    y = 2\n',
  escapes_that_compile:
    "a = '\\\\u' r'\\u' '\\d'\nb = b'\\u' b'\\N'\nc = '\\x41\\u00e9\\U0001F600\\N{BULLET}'\n",
  fstring_starred_tuple: 'x = f"{*a, b}"\n',
  escapes_kept: 'b = b"\\u12 \\N"\nr = r"\\u1 \\x"\ns = "\\x41\\u00e9\\U0001F600\\N{BULLET}\\q"\n',
  match:
    'match x:\n    case [1, *rest]:\n        pass\n    case {"a": b, **kw}:\n        pass\n    case Point(x=0) | None:\n        pass\n    case (1 | 2) as y if y > 1:\n        pass\n    case -1 | 1+2j | "s" | a.b.c:\n        pass\n    case _:\n        pass\n',
  match_tuple_subject: 'match a, b:\n    case 1, 2:\n        pass\n    case (x, *_):\n        pass\n',
  match_soft_keyword:
    'match = 1\ncase = 2\nprint(match, case)\nmatch(x)\nmatch[1] = 2\nmatch.x = 3\nmatch -x\n_ = 4\ntype = 5\n',
  walrus: 'if (n := len(a)) > 10:\n    print(n)\nwhile chunk := f.read():\n    pass\n[y := 1, y ** 2]\n',
  fstrings:
    'x = f"{a!r:>{width}} {b=} {c:.2f} {{}} {d[\'k\']} {e if e else f} {g!s}"\ny = f\'{"nested"}\' rf"\\d{x}" F"{x:{y}.{z}}"\nz = f"""{\na\n+ b\n}"""\nw = f"\\N{BULLET} {x}"\nv = f"{x = }" f"{a != b}" f"{a <= b}" f"{ {1: 2}[1] }"\n',
  decorators:
    '@dataclass(frozen=True)\nclass A:\n    x: int = 0\n    y: list[int] | None = None\n\n@buttons[0].clicked.connect\ndef f(): pass\n@(lambda f: f)\ndef g(): ...\n',
  async_code:
    'async def f():\n    async with a as b, c:\n        async for x in y:\n            await z\n    return [x async for x in y]\n',
  star: 'a, *b = c\nprint(*a, **k)\ndef f(a, /, b, *, c): ...\nx = [*a, *b]\nfirst, *_ = *a, b\nfor x, *y in z: pass\ndef g():\n    return *a, b\n    yield *a, b\nt[*idx]\n',
  lambdas: 'f = lambda x, *a, k=1, **kw: x\ng = lambda: 0\nh = lambda *, k: k\n',
  scopes: 'def f():\n    global x\n    nonlocal y\n    del z, w[0], v.a\n    raise E from e\n',
  exceptions:
    'try:\n    pass\nexcept* ValueError as e:\n    pass\nfinally:\n    pass\ntry:\n    pass\nexcept (A, B):\n    pass\nexcept:\n    pass\nelse:\n    pass\n',
  hints:
    'def f(x: "A", *args: int, **kw: str) -> dict[str, int]:\n    y: int\n    (z): int = 1\n    self.a: list = []\n    return {}\n',
  imports:
    'import os; import sys\nfrom . import x\nfrom .a.b import (c, d,)\nfrom ... import e\nimport a.b.c as d, e\nfrom m import *\n',
  literals:
    'x = rb"\\d" + b"x" + u"y" + """\nmulti\n""" + 0x1f + 1_000 + 1e-3j + 0o17 + 0b1 + .5 + 1. + 00 + 1E5\ny = 1if x else 2\nz = "a" "b" \\\n    "c"\n',
  continuation: 'x = 1 + \\\n    2\nif a and \\\n   b:\n    pass\n',
  conditional: 'x = a if b else c\nassert x, "m"\ny = not a or b and c is not d not in e\n',
  tabs: 'if x:\n\tpass\n\tif y:\n\t\tpass\n',
  slices: 'a[1:2, ::3, ...]\nb[:]\nc[::]\nd[x:y:z, None]\ne[lambda: 1]\n',
  comprehensions:
    'd = {k: v for k, v in x.items() if k if v}\ns = {*a}\nt = {**a, "b": 1}\ng = (x for x in y for z in x)\nsum(x for x in y)\nf(x for x in y)\n',
  generators:
    'def g():\n    x = yield\n    y = yield 1\n    yield from y\n    z = (yield)\n    await_ = [(yield x) for x in ()]\n',
  parenthesized_with:
    'with (open(a) as f, open(b) as g):\n    pass\nwith (a, b):\n    pass\nwith (a):\n    pass\nwith (yield):\n    pass\nwith (a, b,) as c:\n    pass\n',
  empty: '',
  comment_only: '# hi\n   # indented comment\n',
  indented_comment: 'def f():\n    x = 1\n# comment\n        # deeper\n    return x\n',
  for_else: 'for x in y:\n    break\nelse:\n    pass\nwhile True:\n    continue\nelse:\n    pass\n',
  classes:
    'class A(B, metaclass=M, **kw):\n    """doc"""\n    def __init__(self, *a, **k):\n        super().__init__(*a, **k)\n    @property\n    def x(self): return 1\nclass C: pass\n',
  nested_functions:
    'def outer():\n    def inner(a=1, *args, b, c=2, **kw):\n        return a\n    return inner\n',
  unicode_names: 'café = 1\nπ = 3.14\n变量 = café + π\n',
  semicolons: 'x = 1; y = 2;\nif x: y = 3; z = 4\n',
  no_final_newline: 'x = 1',
  crlf: 'x = 1\r\nif x:\r\n    y = 2\r\n',
  chained:
    'a = b = c = 1\nx, y = y, x\n[a, b] = 1, 2\n(a, b), c = d\na.b[c].d = 1\nx += 1; y[0] **= 2; z.a >>= 3\n',
  calls: 'f(a, *b, c=1, *d, **e)\nf(**a, b=1)\nf(a)(b)[c].d()\n',
  ellipsis_and_bools: 'x: tuple[int, ...] = ...\ny = True, False, None\n',
  dict_set: 'x = {}\ny = {1, 2,}\nz = {1: 2, 3: 4,}\n',
  global_semicolon: 'global a, b\n',
  formfeed: 'x = 1\n\f\ny = 2\n',
  numbers_before_keywords: 'x = [0x1 for y in z]\ny = 1 if 1else 0\n',
  string_escapes: 'x = "a\\\nb"\ny = \'it\\\'s\'\nz = r"\\"" \n',
  trailing_backslash_in_brackets: 'x = (1,\n     2)\ny = [\n    1,\n]\n',
  await_power: 'async def f():\n    x = await a ** 2\n    y = -await b\n',
  positional_only: 'def f(a, b=1, /, c=2, *, d, e=3): pass\n',
  annotated_star: 'def f(*args: *Ts): pass\n',
  print_call: 'print("x", end="")\nprint()\n',
};

const INVALID: Record<string, string> = {
  truncated_u_escape: 's = "\\u12"\n',
  truncated_u_escape_in_fstring: 'f = f"a\\u12{x}"\n',
  truncated_x_escape_in_bytes: 'b = b"\\x1"\n',
  malformed_n_escape: 's = "\\N{DASH"\n',
  code_point_too_large: 's = "\\U00110000"\n',
  fstring_lone_starred: 'x = f"{*exc}"\n',
  truncated_u_escape_in_docstring: "'''doc about \\ubmission'''\n",
  truncated_x_escape: "a = 1\nb = '\\x4'\n",
  bare_N_escape: "'\\N'\n",
  def_no_name: 'def (:\n    pass\n',
  unclosed_paren: 'x = foo(1, 2\ny = 3\n',
  unclosed_at_eof: 'x = [1, 2,\n',
  mismatched_bracket: 'x = (1, 2]\n',
  unmatched_close: 'x = 1)\n',
  dedent_mismatch: 'def f():\n    x = 1\n  y = 2\n',
  unexpected_indent: 'x = 1\n    y = 2\n',
  missing_block: 'def f():\nreturn 1\n',
  missing_block_eof: 'if x:\n',
  double_equals_assign: 'x = = 1\n',
  lone_keyword: 'class\n',
  missing_colon: 'if x\n    pass\n',
  print_statement: 'print "hello"\n',
  unterminated_string: 'x = "abc\n',
  unterminated_triple: 'x = """abc\n\n',
  assign_to_call: 'f() = 1\n',
  assign_to_literal: '1 = x\n',
  assign_to_none: 'None = 1\n',
  aug_tuple: 'a, b += 1\n',
  keyword_name: 'import = 1\n',
  invalid_character: 'x = 1 $ 2\n',
  leading_zero: 'x = 012\n',
  bad_decimal: 'x = 1abc\n',
  walrus_attr: '(a.b := 1)\n',
  default_order: 'def f(a=1, b): pass\n',
  lambda_default_order: 'f = lambda a=1, b: 0\n',
  star_alone: 'def f(*): pass\n',
  try_alone: 'try:\n    pass\nx = 1\n',
  else_alone: 'else:\n    pass\n',
  except_mixed: 'try:\n    pass\nexcept* A:\n    pass\nexcept B:\n    pass\n',
  gen_unparenthesized: 'f(a, x for x in y)\n',
  gen_trailing_comma: 'f(x for x in y,)\n',
  positional_after_keyword: 'f(a=1, b)\n',
  fstring_empty: 'x = f"{}"\n',
  fstring_backslash: 'x = f"{\'\\n\'.join(a)}"\n',
  fstring_single_brace: 'x = f"a}b"\n',
  fstring_bad_conversion: 'x = f"{a!x}"\n',
  fstring_bad_expr: 'x = f"{a +}"\n',
  fstring_unclosed: 'x = f"{a"\n',
  bytes_mix: 'x = b"a" "b"\n',
  bytes_non_ascii: 'x = b"café"\n',
  backslash_junk: 'x = 1 \\ 2\n',
  inconsistent_tabs: 'if x:\n        a = 1\n\tb = 2\n',
  match_no_case: 'match x:\n    pass\n',
  decorator_on_nothing: '@dec\nx = 1\n',
  trailing_comma_import: 'from a import b,\n',
  double_star_expr: 'x = **a\n',
  lambda_in_default: 'def f(x=lambda: ): pass\n',
  dict_missing_value: 'x = {1: }\n',
  slice_empty: 'x = a[]\n',
  keyword_arg_expr: 'f(a.b=1)\n',
  del_literal: 'del 1\n',
  for_target_call: 'for f() in x: pass\n',
  with_target_literal: 'with a as 1: pass\n',
  comprehension_target_literal: '[x for 1 in y]\n',
  nested_def_error: 'class A:\n    def f(self):\n        return (\n    def g(self): pass\n',
  null_byte: 'x = 1\u0000\n',
  // a backslash inside the indentation: the first one after whitespace fixes the line's level
  indent_continued_at_2: 'class A:\n    x = 1\n  \\\n  y = 2\n',
  indent_continued_from_0_to_8: 'class A:\n    x = 1\n\\\n        y = 2\n',
};

describe('Python 3.11 syntax check, CPython as the oracle', () => {
  it('accepts every valid case that CPython accepts', () => {
    const names = Object.keys(VALID);
    const oracle = cpython(names.map((n) => VALID[n]));
    const mine = names.map((n) => parsePython(VALID[n]).error ?? null);
    const disagreements = names.filter((n, i) => (oracle[i] === null) !== (mine[i] === null));
    expect(
      oracle.every((o) => o === null),
      JSON.stringify(oracle),
    ).toBe(true);
    expect(disagreements.map((n) => `${n}: ${JSON.stringify(mine[names.indexOf(n)])}`)).toEqual([]);
  });

  it('refuses every invalid case that CPython refuses, on the same line', () => {
    const names = Object.keys(INVALID);
    const oracle = cpython(names.map((n) => INVALID[n]));
    const mine = names.map((n) => parsePython(INVALID[n]).error ?? null);
    const report = names
      .map((n, i) => ({ n, o: oracle[i], m: mine[i] }))
      .filter(({ o, m }) => o === null || m === null || (o.line !== null && o.line !== m.line))
      .map(({ n, o, m }) => `${n}: python ${JSON.stringify(o)} / ours ${JSON.stringify(m)}`);
    expect(report).toEqual([]);
  });

  it('names line and column, and reads a byte-order mark as CPython reads a file', () => {
    expect(parsePython('\ufeffx = 1\n').ok).toBe(true);
    expect(parsePython('x = 1\ndef (:\n    pass\n').error).toMatchObject({ line: 2, column: 5 });
    expect(parsePython('x = (1,\n  2\n').error).toMatchObject({
      line: 1,
      column: 5,
      message: "'(' was never closed",
    });
  });

  it("parses every Python file of the repository's starters, harness and models", () => {
    const files: string[] = [];
    const walk = (dir: string) => {
      for (const name of readdirSync(dir)) {
        if (name === 'node_modules' || name === '__pycache__' || name.startsWith('.')) continue;
        const full = path.join(dir, name);
        if (statSync(full).isDirectory()) walk(full);
        else if (name.endsWith('.py')) files.push(full);
      }
    };
    for (const dir of ['starters', 'harness', 'models', 'bench', 'scripts', 'docker']) {
      try {
        walk(path.join(ROOT, dir));
      } catch {
        // a folder this checkout does not have
      }
    }
    expect(files.length).toBeGreaterThan(20);
    const failures = files
      .map((f) => ({ f: path.relative(ROOT, f), e: parsePython(readFileSync(f, 'utf8')).error }))
      .filter((x) => x.e);
    expect(failures).toEqual([]);
  });

  it('agrees with CPython on 750 mutants of real files: no false refusal, no miss', () => {
    const files = [
      'harness/harness/training/runner.py',
      'harness/harness/decode/engineproc.py',
      'starters/deep-recurrence/submission.py',
      'harness/harness/training/tasks.py',
      'harness/harness/decode/child.py',
    ];
    let seed = 7;
    const rnd = (n: number) => {
      seed = (seed * 1103515245 + 12345) % 2147483648;
      return seed % n;
    };
    const chars = [
      '(',
      ')',
      ':',
      ' ',
      '\n',
      '=',
      ',',
      '"',
      "'",
      '[',
      '{',
      '.',
      '*',
      'if ',
      'def ',
      '\t',
      '\\',
      '#',
      'f"{',
      '}',
    ];
    const cases: string[] = [];
    for (const f of files) {
      const src = readFileSync(path.join(ROOT, f), 'utf8');
      for (let k = 0; k < 150; k++) {
        const pos = rnd(src.length);
        const op = rnd(3);
        const c = chars[rnd(chars.length)];
        const len = 1 + rnd(3);
        cases.push(
          op === 0
            ? src.slice(0, pos) + src.slice(pos + len)
            : op === 1
              ? src.slice(0, pos) + c + src.slice(pos)
              : src.slice(0, pos) + c + src.slice(pos + 1),
        );
      }
    }
    const oracle = cpython(cases);
    const mine = cases.map((c) => parsePython(c).error ?? null);
    // A refusal is false only when CPython compiles the file: a few errors CPython raises after
    // parsing (a bare `*x` statement) are refused on purpose, since such a file never imports.
    const compiles = cpythonCompiles(cases);
    const refusedValid = cases.filter((_, i) => compiles[i] && mine[i] !== null);
    const missed = cases.filter((_, i) => oracle[i] !== null && mine[i] === null);
    const invalid = oracle.filter((o) => o !== null).length;
    const sameLine = oracle.filter((o, i) => o !== null && mine[i]?.line === o.line).length;
    expect(invalid).toBeGreaterThan(300);
    expect(refusedValid).toEqual([]);
    expect(missed).toEqual([]);
    // CPython's "Perhaps you forgot a comma?" points at the bracket's start; the rest agree.
    expect(sameLine / invalid).toBeGreaterThan(0.9);
  }, 60_000);
});

describe('entry points', () => {
  const engine = (src: string) => checkEngineModule(parsePython(src));
  const single = (src: string) => checkSubmissionModule(parsePython(src));

  it('accepts the contract and its common variants', () => {
    expect(
      engine(
        'class Engine:\n    def __init__(self, model_path: str) -> None:\n        pass\n    def generate(self, input_ids, max_new_tokens):\n        yield []\n',
      ),
    ).toBeNull();
    expect(engine('from .fast import Engine\n')).toBeNull();
    expect(engine('import base\nclass Engine(base.Engine):\n    pass\n')).toBeNull();
    expect(
      engine('class Engine:\n    def __init__(self, *args, **kw): pass\n    def generate(self, *a): pass\n'),
    ).toBeNull();
    expect(
      engine('try:\n    from fast import Engine\nexcept ImportError:\n    from slow import Engine\n'),
    ).toBeNull();
    expect(
      single('from benchmark import Submission\nSUBMISSION = Submission(build_model=a, build_optimizer=b)\n'),
    ).toBeNull();
    expect(single('import benchmark\nSUBMISSION = benchmark.Submission(a, b)\n')).toBeNull();
  });

  it('refuses a missing class, a missing method and a wrong signature, with the line', () => {
    expect(engine('x = 1\n')?.message).toMatch(/does not define class Engine/);
    expect(engine('class Engine:\n    pass\n')?.message).toMatch(/no __init__\(self, model_path\)/);
    expect(engine('class Engine:\n    def __init__(self, model_path): pass\n')?.message).toMatch(
      /no generate\(self, input_ids, max_new_tokens\)/,
    );
    expect(
      engine('class Engine:\n    def __init__(self): pass\n    def generate(self, a, b): pass\n'),
    ).toMatchObject({ line: 2, message: expect.stringMatching(/Engine\(model_path\)/) });
    expect(
      engine('class Engine:\n    def __init__(self, p): pass\n    def generate(self, input_ids): pass\n'),
    ).toMatchObject({ line: 3 });
    expect(engine('def Engine(model_path): pass\n')?.message).toMatch(/function/);
    expect(single('x = 1\n')?.message).toMatch(/SUBMISSION = Submission/);
    expect(single('def f():\n    SUBMISSION = 1\n')?.message).toMatch(/does not define SUBMISSION/);
  });
});
