import { writeTar } from '@dryft/libs';
import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import {
  asSubmissionPy,
  gunzipLimited,
  renamedSubmissionPy,
  validateArchiveBytes,
  validateSingleFileBytes,
} from './validate';

const enc = new TextEncoder();
const tgz = (files: Record<string, string | Uint8Array>) =>
  new Uint8Array(
    gzipSync(
      writeTar(
        Object.entries(files).map(([name, c]) => ({
          name,
          content: typeof c === 'string' ? enc.encode(c) : c,
        })),
      ),
    ),
  );
const ENGINE_PY =
  'class Engine:\n    def __init__(self, model_path):\n        pass\n\n    def generate(self, input_ids, max_new_tokens):\n        yield [0]\n';
const failed = (v: { verdicts: { rule: string; passed: boolean }[] }) =>
  v.verdicts.filter((x) => !x.passed).map((x) => x.rule);

describe('in-browser archive validation (DecompressionStream + libs rules)', () => {
  it('accepts an engine archive and lists its files', async () => {
    const v = await validateArchiveBytes(tgz({ 'engine.py': ENGINE_PY, 'util/helpers.py': 'x = 1\n' }));
    expect(v.ok).toBe(true);
    expect(v.files.map((f) => f.path).sort()).toEqual(['engine.py', 'util/helpers.py']);
    expect(v.verdicts.every((x) => x.passed)).toBe(true);
  });

  it('names the rule for a containing folder', async () => {
    const v = await validateArchiveBytes(tgz({ 'engine/engine.py': 'class Engine: pass\n' }));
    expect(v.ok).toBe(false);
    expect(failed(v)).toEqual(expect.arrayContaining(['layout', 'entrypoint']));
  });

  it('refuses a Python syntax error before upload, naming file, line and column', async () => {
    const v = await validateArchiveBytes(
      tgz({ 'engine.py': ENGINE_PY, 'ops/attn.py': 'def (:\n    pass\n' }),
    );
    expect(failed(v)).toEqual(['python_syntax']);
    expect(v.verdicts.find((x) => x.rule === 'python_syntax')!.problems[0]).toBe(
      'ops/attn.py, line 1, column 5: invalid syntax',
    );
    const single = validateSingleFileBytes('submission.py', enc.encode('x = (1,\n'));
    expect(failed(single)).toEqual(['python_syntax']);
  });

  it('refuses a ZIP before decompressing', async () => {
    const v = await validateArchiveBytes(new Uint8Array([0x50, 0x4b, 3, 4, 0, 0]));
    expect(failed(v)).toEqual(['format']);
  });

  it('reports corrupt gzip as a format problem', async () => {
    const good = tgz({ 'engine.py': 'x\n' });
    const v = await validateArchiveBytes(good.subarray(0, good.length - 12));
    expect(failed(v)).toContain('format');
  });

  it('stops decompressing at the limit (a gzip bomb never expands fully)', async () => {
    const bomb = new Uint8Array(gzipSync(new Uint8Array(40 * 1024 * 1024)));
    const out = await gunzipLimited(bomb, 1024 * 1024);
    expect(out.truncated).toBe(true);
    const v = await validateArchiveBytes(bomb);
    expect(failed(v)).toContain('expanded_size');
  });

  it('flags binaries and disallowed extensions per rule', async () => {
    const v = await validateArchiveBytes(
      tgz({ 'engine.py': ENGINE_PY, 'weights.bin': new Uint8Array([0, 255, 1]) }),
    );
    expect(failed(v)).toEqual(['extensions']);
  });
});

describe('single-file validation', () => {
  it('accepts submission.py and refuses other names and sizes', () => {
    expect(validateSingleFileBytes('submission.py', enc.encode('SUBMISSION = Submission(a, b)\n')).ok).toBe(
      true,
    );
    expect(failed(validateSingleFileBytes('main.py', enc.encode('SUBMISSION = None\n')))).toEqual([
      'filename',
    ]);
    expect(failed(validateSingleFileBytes('submission.py', new Uint8Array(300 * 1024).fill(32)))).toEqual([
      'size',
    ]);
  });
});

describe('a submission.py the browser renamed', () => {
  it('is recognised, and offered under the required name with the same bytes', async () => {
    for (const name of ['submission (1).py', 'submission(2).py', 'submission-3.py', 'Submission (12).py'])
      expect(renamedSubmissionPy(name), name).toBe(true);
    for (const name of ['submission.py', 'my_submission.py', 'submission (1).tar.gz', 'engine.py'])
      expect(renamedSubmissionPy(name), name).toBe(false);
    const renamed = asSubmissionPy(new File(['SUBMISSION = Submission(a, b)\n'], 'submission (1).py'));
    expect(renamed.name).toBe('submission.py');
    expect(await renamed.text()).toBe('SUBMISSION = Submission(a, b)\n');
  });
});
