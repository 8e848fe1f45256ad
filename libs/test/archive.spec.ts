import fc from 'fast-check';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { ARCHIVE_LIMITS, readTar, validateSingleFile, writeTar } from '../src/index';
import { packFiles, unpackValidated, validateArchive } from '../src/node';

/** A raw tar entry with any name and type, as a hostile packer would write it. */
function rawEntry(name: string, flag: string, content = Buffer.alloc(0), linkname = ''): Buffer {
  const header = Buffer.alloc(512);
  header.write(name.slice(0, 100), 0, 'utf8');
  header.write('0000644\0', 100);
  header.write('0000000\0', 108);
  header.write('0000000\0', 116);
  header.write(content.length.toString(8).padStart(11, '0') + '\0', 124);
  header.write('00000000000\0', 136);
  header.write(flag, 156);
  header.write(linkname, 157);
  header.write('ustar\0', 257);
  header.write('00', 263);
  header.fill(' ', 148, 156);
  let sum = 0;
  for (const b of header) sum += b;
  header.write(sum.toString(8).padStart(6, '0') + '\0 ', 148);
  const pad = Buffer.alloc((512 - (content.length % 512)) % 512);
  return Buffer.concat([header, content, pad]);
}
const tarGz = (...entries: Buffer[]) => gzipSync(Buffer.concat([...entries, Buffer.alloc(1024)]));
const ENGINE_PY =
  'class Engine:\n    def __init__(self, model_path):\n        pass\n\n    def generate(self, input_ids, max_new_tokens):\n        yield [0]\n';
const engine = rawEntry('engine.py', '0', Buffer.from(ENGINE_PY));

/** A PAX extended header carrying `path` (its length field counts bytes), then the entry itself. */
function paxEntry(name: string, content: Buffer): Buffer {
  const body = ` path=${name}\n`;
  let len = Buffer.byteLength(body) + 1;
  while (Buffer.byteLength(`${len}${body}`) !== len) len += 1;
  const record = Buffer.from(`${len}${body}`);
  return Buffer.concat([rawEntry('././@PaxHeader', 'x', record), rawEntry('placeholder.py', '0', content)]);
}

/** An archive written by CPython's own tarfile (PAX format, its default), as a participant's script would. */
function pythonTarGz(files: Record<string, string>): Buffer {
  const script = `
import io, json, sys, tarfile
files = json.load(sys.stdin)
buf = io.BytesIO()
with tarfile.open(fileobj=buf, mode="w:gz", format=tarfile.PAX_FORMAT) as tar:
    for name, text in files.items():
        data = text.encode("utf-8")
        info = tarfile.TarInfo(name)
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
sys.stdout.buffer.write(buf.getvalue())
`;
  const res = spawnSync(process.env.HARNESS_PYTHON ?? 'python3', ['-c', script], {
    input: JSON.stringify(files),
  });
  if (res.status !== 0) throw new Error(res.stderr.toString());
  return res.stdout;
}

async function expectRefused(bytes: Buffer, rule: string) {
  const v = await validateArchive(bytes);
  expect(v.ok).toBe(false);
  expect(v.problems.map((p) => p.rule)).toContain(rule);
  expect(v.files).toEqual([]);
  // Refused archives produce nothing to unpack: a fresh directory stays empty.
  const dir = mkdtempSync(path.join(tmpdir(), 'dryft-unpack-'));
  try {
    await unpackValidated(v.files, dir);
    expect(readdirSync(dir)).toEqual([]);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const segment = fc.stringMatching(/^[a-z][a-z0-9_]{0,7}$/);

describe('archive rules against hostile archives (property-based)', () => {
  it('refuses every path that escapes: "..", absolute, ./ prefixes', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(segment, { minLength: 1, maxLength: 3 }),
        fc.constantFrom('../', '/', './', 'a/../../'),
        async (parts, prefix) => {
          const name = `${prefix}${parts.join('/')}.py`;
          const rule = prefix === './' ? 'layout' : 'paths';
          await expectRefused(tarGz(engine, rawEntry(name, '0', Buffer.from('x = 1\n'))), rule);
        },
      ),
      { numRuns: 40 },
    );
  });

  it('refuses links and special files', async () => {
    await fc.assert(
      fc.asyncProperty(
        segment,
        fc.constantFrom('1', '2', '3', '4', '6'),
        fc.constantFrom('/etc/passwd', '../x', 'engine.py'),
        async (name, flag, target) => {
          await expectRefused(
            tarGz(engine, rawEntry(`${name}.py`, flag, Buffer.alloc(0), target)),
            'entry_types',
          );
        },
      ),
      { numRuns: 30 },
    );
  });

  it('refuses duplicate names and names that collide by case or Unicode normalization', async () => {
    const nfc = 'caf\u00e9.py';
    const nfd = 'cafe\u0301.py';
    await expectRefused(
      tarGz(engine, rawEntry(nfc, '0', Buffer.from('a\n')), rawEntry(nfd, '0', Buffer.from('b\n'))),
      'unique_names',
    );
    await fc.assert(
      fc.asyncProperty(segment, async (name) => {
        await expectRefused(
          tarGz(
            engine,
            rawEntry(`${name}.py`, '0', Buffer.from('a\n')),
            rawEntry(`${name.toUpperCase()}.py`, '0', Buffer.from('b\n')),
          ),
          'unique_names',
        );
        await expectRefused(
          tarGz(engine, rawEntry(`${name}.py`, '0'), rawEntry(`${name}.py`, '0')),
          'unique_names',
        );
      }),
      { numRuns: 20 },
    );
  });

  it(`refuses more than ${ARCHIVE_LIMITS.files} files`, async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: ARCHIVE_LIMITS.files, max: ARCHIVE_LIMITS.files + 40 }),
        async (extra) => {
          const files = Array.from({ length: extra }, (_, i) => ({
            name: `m${i}.py`,
            content: Buffer.from('x=1\n'),
          }));
          await expectRefused(
            packFiles([{ name: 'engine.py', content: Buffer.from(ENGINE_PY) }, ...files]),
            'file_count',
          );
        },
      ),
      { numRuns: 5 },
    );
  });

  it(`checks at most ${ARCHIVE_LIMITS.pythonBytes} bytes of Python per archive: over it, refused before parsing`, async () => {
    const line = 'value_0123 = [1, 2, 3] + [4, 5, 6]\n';
    const python = (bytes: number) => Buffer.from(line.repeat(Math.floor(bytes / line.length)));
    const half = ARCHIVE_LIMITS.pythonBytes / 2;
    // Two files of just under half each: together under the bound, parsed and accepted.
    const under = await validateArchive(
      packFiles([
        { name: 'engine.py', content: Buffer.from(ENGINE_PY) },
        { name: 'a.py', content: python(half - 4096) },
        { name: 'b.py', content: python(half - 4096) },
      ]),
    );
    expect(under.ok).toBe(true);
    // The same two a little larger pass it together (neither alone): refused fast, naming the largest.
    const t0 = Date.now();
    const over = await validateArchive(
      packFiles([
        { name: 'engine.py', content: Buffer.from(ENGINE_PY) },
        { name: 'a.py', content: python(half + 4096) },
        { name: 'b.py', content: python(half) },
      ]),
    );
    expect(Date.now() - t0).toBeLessThan(1500);
    expect(over.ok).toBe(false);
    expect(over.files).toEqual([]);
    expect(over.problems).toEqual([
      expect.objectContaining({
        rule: 'python_syntax',
        message: expect.stringMatching(
          /^The \.py files add up to \d+ bytes; at most 4194304 bytes \(4 MiB\) of Python are checked per archive\. .*"a\.py"/,
        ),
      }),
    ]);
    // Non-Python files do not count toward it.
    const data = await validateArchive(
      packFiles([
        { name: 'engine.py', content: Buffer.from(ENGINE_PY) },
        { name: 'notes.txt', content: python(ARCHIVE_LIMITS.pythonBytes + 4096) },
      ]),
    );
    expect(data.ok).toBe(true);
  });

  it('stops a decompression bomb at the expanded limit', async () => {
    const bomb = gzipSync(
      Buffer.concat([rawEntry('engine.py', '0', Buffer.alloc(40 * 1024 * 1024, 0x61)), Buffer.alloc(1024)]),
      { level: 9 },
    );
    expect(bomb.length).toBeLessThan(ARCHIVE_LIMITS.compressedBytes);
    const started = Date.now();
    await expectRefused(bomb, 'expanded_size');
    expect(Date.now() - started).toBeLessThan(5000);
  });

  it('refuses truncated or corrupt gzip and tar at any cut', async () => {
    const good = packFiles([
      { name: 'engine.py', content: Buffer.from('class Engine:\n    pass\n'.repeat(50)) },
    ]);
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 2, max: good.length - 1 }), async (cut) => {
        const v = await validateArchive(good.subarray(0, cut));
        expect(v.ok).toBe(false);
        expect(v.problems.map((p) => p.rule)).toContain('format');
      }),
      { numRuns: 40 },
    );
  });

  it('accepts what packFiles writes, byte-identically for the same input, and unpacks it inside the directory', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.uniqueArray(fc.tuple(segment, fc.constantFrom('.py', '.json', '.md')), {
          maxLength: 6,
          selector: ([s, e]) => (s + e).toLowerCase(),
        }),
        async (extra) => {
          const files = [
            { name: 'engine.py', content: Buffer.from(ENGINE_PY) },
            ...extra
              .filter(([s, e]) => `${s}${e}` !== 'engine.py')
              .map(([s, e]) => ({ name: `pkg/${s}${e}`, content: Buffer.from(`# ${s}\n`) })),
          ];
          const a = packFiles(files);
          expect(Buffer.compare(a, packFiles([...files].reverse()))).toBe(0);
          const v = await validateArchive(a);
          expect(v.ok).toBe(true);
          const dir = mkdtempSync(path.join(tmpdir(), 'dryft-unpack-'));
          try {
            await unpackValidated(v.files, dir);
            expect(readdirSync(dir)).toContain('engine.py');
          } finally {
            rmSync(dir, { recursive: true, force: true });
          }
        },
      ),
      { numRuns: 25 },
    );
  });

  it("reads PAX headers by bytes: Python tarfile's café.py beside engine.py is accepted", async () => {
    const v = await validateArchive(
      pythonTarGz({
        'engine.py': ENGINE_PY,
        'café.py': 'X = 1\n',
        'ünï/çødé.py': 'Y = 2\n',
        'z.py': 'Z = 3\n',
      }),
    );
    expect(v.problems).toEqual([]);
    expect(v.files.map((f) => f.path).sort()).toEqual(['café.py', 'engine.py', 'z.py', 'ünï/çødé.py']);
    // The same with crafted bytes, several non-ASCII records in a row.
    const crafted = await validateArchive(
      tarGz(
        engine,
        paxEntry('naïve/café.py', Buffer.from('A = 1\n')),
        paxEntry('日本.py', Buffer.from('B = 2\n')),
      ),
    );
    expect(crafted.problems).toEqual([]);
    expect(crafted.files.map((f) => f.path)).toEqual(['engine.py', 'naïve/café.py', '日本.py']);
  });

  it('refuses an NFC/NFD pair of the same name in PAX headers (unique_names)', async () => {
    const nfc = 'caf\u00e9.py';
    const nfd = 'cafe\u0301.py';
    expect(nfc).not.toBe(nfd);
    await expectRefused(
      pythonTarGz({ 'engine.py': ENGINE_PY, [nfc]: 'A = 1\n', [nfd]: 'B = 2\n' }),
      'unique_names',
    );
    await expectRefused(
      tarGz(engine, paxEntry(nfc, Buffer.from('A = 1\n')), paxEntry(nfd, Buffer.from('B = 2\n'))),
      'unique_names',
    );
  });

  it('refuses a PAX record whose length does not match its bytes', async () => {
    const bad = Buffer.concat([
      rawEntry('././@PaxHeader', 'x', Buffer.from('99 path=x.py\n')),
      rawEntry('x.py', '0'),
    ]);
    await expectRefused(tarGz(engine, bad), 'format');
  });

  it('round-trips long names through pax headers', () => {
    const long = `${'deep/'.repeat(30)}module.py`;
    const names: string[] = [];
    readTar(writeTar([{ name: long, content: new Uint8Array([1]) }]), (e) => names.push(e.name));
    expect(names).toEqual([long]);
  });

  it('refuses an unpack into a directory that is not fresh', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'dryft-unpack-'));
    try {
      await unpackValidated([{ path: 'a.py', content: Buffer.from('x') }], dir);
      await expect(unpackValidated([{ path: 'b.py', content: Buffer.from('x') }], dir)).rejects.toThrow(
        /not empty/,
      );
      const fresh = mkdtempSync(path.join(tmpdir(), 'dryft-unpack-'));
      await expect(
        unpackValidated([{ path: '../escape.py', content: Buffer.from('x') }], fresh),
      ).rejects.toThrow(/outside/);
      rmSync(fresh, { recursive: true, force: true });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('holds single files to UTF-8, name and size', () => {
    expect(validateSingleFile('submission.py', Buffer.from('SUBMISSION = Submission(a, b)\n')).ok).toBe(true);
    expect(validateSingleFile('submission.py', Buffer.from([0xc3, 0x28])).problems[0].rule).toBe('text');
    expect(validateSingleFile('sub.py', Buffer.from('x')).problems[0].rule).toBe('filename');
  });

  it('refuses what the rules forbid and can be seen without running it: torch.load, the network, subprocess', () => {
    const check = (src: string) =>
      validateSingleFile(
        'submission.py',
        Buffer.from(`${src}\nSUBMISSION = Submission(a, b)\n`),
      ).problems.filter((p) => p.rule === 'forbidden_uses');
    const loads = check('import torch\nstate = torch.load("w.pt")');
    expect(loads).toHaveLength(1);
    expect(loads[0].message).toBe(
      'submission.py, line 2, column 9: torch.load is not allowed: no hard-coded weights (trainable weights must use a random initialization and be updated during training)',
    );
    expect(check('from torch import nn, load as L')[0].message).toContain('torch.load is not allowed');
    expect(check('import torch.hub')[0].message).toContain('torch.hub downloads weights');
    expect(check('import os, socket')[0].message).toContain('socket is a network module');
    expect(check('from urllib.request import urlopen')[0].message).toContain(
      'urllib.request is a network module',
    );
    expect(check('import requests as r')).toHaveLength(1);
    expect(check('def f():\n    import subprocess\n    return 1')[0].message).toMatch(
      /line 2, column 12: subprocess starts other processes/,
    );
    expect(check('import os\nos.system("ls")')[0].message).toContain('os.system starts other processes');
    expect(check('import os\nos.execvp("ls", [])')).toHaveLength(1);
    // names in strings and comments, other modules' attributes and ordinary torch use pass
    expect(
      check('import torch\nx = "torch.load"  # torch.load\ny = self_obj.torch.load\nz = torch.zeros(3)'),
    ).toEqual([]);
    expect(check('import os\np = os.path.join("a", "b")\nfrom torch.nn import functional as F')).toEqual([]);
    expect(check('from .socket import x')).toEqual([]);
  });

  it('passes the starters’ submission.py files', () => {
    for (const starter of ['deep-recurrence', 'recurrence-cpu']) {
      const src = readFileSync(path.join(__dirname, '../../starters', starter, 'submission.py'));
      expect(validateSingleFile('submission.py', src).problems).toEqual([]);
    }
  });
});
