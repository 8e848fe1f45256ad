import { mkdtempSync, promises as fs, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { gunzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readTar } from '@dryft/libs';
import { validateArchive } from '@dryft/libs/node';
import { cli } from './helpers';

let dir: string;
const engine =
  'class Engine:\n    def __init__(self, model_path):\n        pass\n\n    def generate(self, input_ids, max_new_tokens):\n        yield [0]\n';

async function folder(name: string, files: Record<string, string | Buffer>): Promise<string> {
  const root = path.join(dir, name);
  for (const [rel, content] of Object.entries(files)) {
    await fs.mkdir(path.dirname(path.join(root, rel)), { recursive: true });
    await fs.writeFile(path.join(root, rel), content);
  }
  return root;
}

beforeAll(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'dryft-cli-local-'));
});
afterAll(async () => {
  await fs.rm(dir, { recursive: true, force: true });
});

describe('dryft validate', () => {
  it('passes a good engine folder, rule by rule, exit 0', async () => {
    const root = await folder('good', {
      'engine.py': engine,
      'kernels/fused.py': '# triton\n',
      'README.md': 'notes\n',
    });
    const r = await cli(['validate', root]);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('pass  entrypoint');
    expect(r.stdout).toContain('Valid: 3 file(s)');
  });

  it('names the rule a bad folder breaks and exits 2', async () => {
    const root = await folder('weights', { 'engine.py': engine, 'weights.bin': Buffer.from([0, 1, 2, 3]) });
    const r = await cli(['validate', root]);
    expect(r.code).toBe(2);
    expect(r.stdout).toMatch(/FAIL {2}extensions/);
    expect(r.stdout).toContain('"weights.bin" has a file type that is not allowed');
  });

  it('explains a containing folder (engine.py not at the root)', async () => {
    const root = await folder('nested', { 'engine/engine.py': engine });
    const r = await cli(['--json', 'validate', root]);
    expect(r.code).toBe(2);
    const out = JSON.parse(r.stdout);
    expect(out.ok).toBe(false);
    const failed = out.verdicts
      .filter((v: { passed: boolean }) => !v.passed)
      .map((v: { rule: string }) => v.rule);
    expect(failed).toEqual(['entrypoint', 'layout']);
  });

  it('gives the same verdict as the shared server rules for an archive', async () => {
    const root = await folder('for-archive', { 'engine.py': engine });
    const out = path.join(dir, 'engine.tar.gz');
    expect((await cli(['package', root, '--output', out])).code).toBe(0);
    const r = await cli(['--json', 'validate', out]);
    const server = await validateArchive(readFileSync(out));
    expect(JSON.parse(r.stdout).verdicts).toEqual(server.verdicts);
  });

  it('refuses Python that cannot be imported, offline, naming file, line and column', async () => {
    const broken = await folder('broken-syntax', {
      'engine.py': engine,
      'ops/attn.py': 'def f(:\n    pass\n',
    });
    const r = await cli(['validate', broken]);
    expect(r.code).toBe(2);
    expect(r.stdout).toMatch(/FAIL {2}python_syntax/);
    expect(r.stdout).toContain('ops/attn.py, line 1, column 7: invalid syntax');
    const noClass = await folder('no-class', { 'engine.py': 'def generate():\n    pass\n' });
    const r2 = await cli(['validate', noClass]);
    expect(r2.code).toBe(2);
    expect(r2.stdout).toMatch(/FAIL {2}entrypoint/);
    expect(r2.stdout).toContain('engine.py, line 1, column 1: engine.py does not define class Engine');
    const single = path.join(dir, 'bad-single', 'submission.py');
    await fs.mkdir(path.dirname(single));
    writeFileSync(single, 'import torch\n\ndef (:\n    pass\n');
    const r3 = await cli(['validate', single]);
    expect(r3.code).toBe(2);
    expect(r3.stdout).toContain('submission.py, line 3, column 5: invalid syntax');
  });

  it('refuses a ZIP with the format rule', async () => {
    const zip = path.join(dir, 'engine.zip');
    writeFileSync(zip, Buffer.from([0x50, 0x4b, 0x03, 0x04, 0, 0, 0, 0]));
    const r = await cli(['validate', zip]);
    expect(r.code).toBe(2);
    expect(r.stdout).toContain('ZIP archives are not supported');
  });

  it('refuses a symlink inside the folder', async () => {
    const root = await folder('link', { 'engine.py': engine });
    await fs.symlink('/etc/passwd', path.join(root, 'passwd.txt'));
    const r = await cli(['validate', root]);
    expect(r.code).toBe(2);
    expect(r.stdout).toMatch(/FAIL {2}entry_types/);
  });

  it('checks a single submission.py with the single-file rules', async () => {
    const good = path.join(dir, 'submission.py');
    writeFileSync(good, 'SUBMISSION = Submission(build_model=m, build_optimizer=o)\n');
    expect((await cli(['validate', good])).code).toBe(0);
    const wrong = path.join(dir, 'train.py');
    writeFileSync(wrong, 'x = 1\n');
    const r = await cli(['validate', wrong]);
    expect(r.code).toBe(2);
    expect(r.stdout).toContain('must be named submission.py');
    const big = path.join(dir, 'big', 'submission.py');
    await fs.mkdir(path.dirname(big));
    writeFileSync(big, Buffer.alloc(256 * 1024 + 1, 0x61));
    expect((await cli(['validate', big])).stdout).toContain('the limit is 262144 bytes');
  });

  it('exits 2 for a path that does not exist', async () => {
    const r = await cli(['validate', path.join(dir, 'missing')]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('does not exist');
  });
});

describe('dryft package', () => {
  it('writes engine.py at the archive root with no ./ prefix, byte-identical every time', async () => {
    const root = await folder('pkg', {
      'engine.py': engine,
      'ops/__init__.py': '',
      'ops/attn.py': 'pass\n',
      'config.yaml': 'a: 1\n',
    });
    await fs.mkdir(path.join(root, '__pycache__'));
    writeFileSync(path.join(root, '__pycache__', 'engine.cpython-311.pyc'), Buffer.from([1, 2, 3]));
    const a = path.join(dir, 'a.tar.gz');
    const b = path.join(dir, 'b.tar.gz');
    expect((await cli(['package', root, '--output', a])).code).toBe(0);
    // Touch the files: timestamps must not change the bytes.
    const later = new Date(Date.now() + 60_000);
    await fs.utimes(path.join(root, 'engine.py'), later, later);
    expect((await cli(['package', root, '-o', b])).code).toBe(0);
    expect(readFileSync(a).equals(readFileSync(b))).toBe(true);
    const names: string[] = [];
    readTar(gunzipSync(readFileSync(a)), (e) => {
      names.push(e.name);
    });
    expect(names).toContain('engine.py');
    expect(names.some((n) => n.startsWith('./') || n.startsWith('/') || n.startsWith('pkg/'))).toBe(false);
    expect(names.some((n) => n.includes('__pycache__'))).toBe(false);
  });

  it('refuses to package an invalid folder and writes nothing', async () => {
    const root = await folder('no-engine', { 'model.py': 'x = 1\n' });
    const out = path.join(dir, 'no.tar.gz');
    const r = await cli(['package', root, '--output', out]);
    expect(r.code).toBe(2);
    await expect(fs.stat(out)).rejects.toThrow();
  });

  it('needs --output (usage error, exit 2)', async () => {
    const r = await cli(['package', dir]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("required option '-o, --output <file>'");
  });
});
