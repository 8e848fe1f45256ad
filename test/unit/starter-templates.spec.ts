import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { gunzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { ALLOWED_EXTENSIONS, readTar, validateSingleFile } from '@dryft/libs';
import { generateToken, loadBenchmarkDefinitions, packFolder, validateArchive } from '@dryft/libs/node';
import {
  collectTemplate,
  excludedFromTemplate,
  packTemplate,
} from '../../apps/api/src/submissions/template-archive';

/**
 * The starter repositories (starters/*): what a participant copies with "Use this template" or
 * "Download template". Their engines must pass the hub's own rules, through the real CLI process
 * when it is built; every file must be an allowed type or a documented exception outside the
 * submitted folder (docs/STARTERS.md); and no credential may be anywhere in them.
 */
const ROOT = path.resolve(__dirname, '../..');
const STARTERS = ['qwen3-4b-decode', 'toy-decode', 'deep-recurrence'];
const DECODE = ['qwen3-4b-decode', 'toy-decode'];
const CLI_BUNDLE = path.join(ROOT, 'apps/cli/dist/dryft.cjs');
const PYTHON = process.env.PYTHON ?? 'python3';
/** Files outside the submitted folder that are not of an allowed type, each documented in docs/STARTERS.md. */
const DOCUMENTED_EXCEPTIONS = ['.gitignore', 'bin/.gitkeep', 'install-dryft.sh', 'install-dryft.ps1'];
const REQUIRED = [
  'dryft.json',
  'README.md',
  'ENGINE_CONTRACT.md',
  'AGENTS.md',
  'agent/README.md',
  'agent/research.py',
  'agent/config.json',
  'requirements.txt',
  'install-dryft.sh',
  'install-dryft.ps1',
  'bin/.gitkeep',
  '.gitignore',
];

/** The starter's files as the template ships them (what git tracks, minus nothing; caches, journals, bin/dryft left out). */
function files(starter: string): string[] {
  const root = path.join(ROOT, 'starters', starter);
  const out: string[] = [];
  const walk = (dir: string, rel: string) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const r = rel ? `${rel}/${entry.name}` : entry.name;
      if (excludedFromTemplate(r, entry.isDirectory())) continue;
      if (entry.isDirectory()) walk(path.join(dir, entry.name), r);
      else out.push(r);
    }
  };
  walk(root, '');
  return out.sort();
}

const ext = (name: string) => {
  const base = name.split('/').pop()!;
  const dot = base.lastIndexOf('.');
  return dot <= 0 ? '' : base.slice(dot).toLowerCase();
};

// Anything shaped like a real credential. The docs' placeholders (dryft_pat_REPLACE_ME, dryft_pat_...) are not.
const SECRET =
  /dryft_(?:pat|agent)_(?!REPLACE_ME\b|\.\.\.)[A-Za-z0-9_]{8,}|\bgh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}|-----BEGIN [A-Z ]*PRIVATE KEY-----/;

describe('starter templates', () => {
  it.each(STARTERS)('%s has the whole first-run tree', (starter) => {
    const have = files(starter);
    for (const f of REQUIRED) expect(have, `${starter}/${f}`).toContain(f);
    expect(statSync(path.join(ROOT, 'starters', starter, 'install-dryft.sh')).mode & 0o111).not.toBe(0);
  });

  it.each(STARTERS)(
    '%s: every file is an allowed type or a documented exception outside the submitted folder',
    (starter) => {
      const submitted = starter === 'deep-recurrence' ? 'submission.py' : 'engine/';
      for (const f of files(starter)) {
        if (f.startsWith(submitted) || f === submitted) {
          expect(ALLOWED_EXTENSIONS, `${starter}/${f} is submitted`).toContain(ext(f));
          continue;
        }
        if (!ALLOWED_EXTENSIONS.includes(ext(f)))
          expect(DOCUMENTED_EXCEPTIONS, `${starter}/${f}`).toContain(f);
      }
      const doc = readFileSync(path.join(ROOT, 'docs/STARTERS.md'), 'utf8');
      for (const f of DOCUMENTED_EXCEPTIONS)
        expect(doc, `docs/STARTERS.md documents ${f}`).toContain(`\`${f}\``);
    },
  );

  it.each(DECODE)(
    '%s: ENGINE_CONTRACT.md states the benchmark definition’s current limits, checks and workloads',
    (starter) => {
      const def = loadBenchmarkDefinitions(path.join(ROOT, 'config/benchmarks')).find(
        (d) => d.id === starter,
      );
      if (!def || def.kind !== 'decode') throw new Error(`no decode definition ${starter}`);
      const doc = readFileSync(path.join(ROOT, 'starters', starter, 'ENGINE_CONTRACT.md'), 'utf8');
      const want = [
        `${def.limits.loadSeconds} s`,
        `${def.limits.sampleSeconds} s`,
        `${def.limits.runSeconds} s`,
        `${def.runTimeLimitSeconds} s`,
        `${def.checks.maxRatioSpreadPct} %`,
        `${def.samples.warmup} warm-up + 1 timed`,
        `${def.samples.warmup} warm-up + ${def.samples.official} to ${def.samples.maxPairs} pairs`,
        `± ${def.samples.targetHalfWidthPct} %`,
        ...(def.limits.memoryBytes ? [String(def.limits.memoryBytes)] : ['no memory limit']),
        ...(def.checks.maxTpotMs ? [`TPOT ≤ ${def.checks.maxTpotMs} ms`] : []),
        ...(def.checks.maxTtftMs ? [`TTFT ≤ ${def.checks.maxTtftMs} ms`] : []),
        def.checks.logitTolerance === 0
          ? 'tolerance here is **0**'
          : `**${def.checks.logitTolerance} logit**`,
        ...def.workloads.public.map((w) => `\`${w.name}\``),
      ];
      for (const text of want)
        expect(
          doc,
          `${starter}/ENGINE_CONTRACT.md should say "${text}" (config/benchmarks/${starter}.yaml changed?)`,
        ).toContain(text);
    },
  );

  it.each(STARTERS)(
    '%s: dryft.json names its own benchmark, whose definition names this starter (the one place it is said)',
    (starter) => {
      const dir = path.join(ROOT, 'starters', starter);
      const settings = JSON.parse(readFileSync(path.join(dir, 'dryft.json'), 'utf8'));
      expect(settings.benchmark).toBe(starter);
      const def = loadBenchmarkDefinitions(path.join(ROOT, 'config/benchmarks')).find(
        (d) => d.id === settings.benchmark,
      );
      expect(def, `config/benchmarks/${settings.benchmark}.yaml`).toBeDefined();
      expect(def!.starter).toContain(starter);
      expect(existsSync(path.join(dir, settings.submission))).toBe(true);
      const config = JSON.parse(readFileSync(path.join(dir, 'agent/config.json'), 'utf8'));
      expect(config, 'agent/config.json must not name a second benchmark').not.toHaveProperty('benchmark');
      expect(config.submission).toBe(settings.submission);
    },
  );

  it('no credential anywhere under starters/ (and the scan does catch real ones)', () => {
    expect(SECRET.test(generateToken('pat'))).toBe(true);
    expect(SECRET.test(generateToken('agent'))).toBe(true);
    expect(SECRET.test('ghp_' + 'a1B2'.repeat(9))).toBe(true);
    expect(SECRET.test('-----BEGIN OPENSSH PRIVATE KEY-----')).toBe(true);
    expect(SECRET.test('export DRYFT_TOKEN="dryft_pat_REPLACE_ME"')).toBe(false);
    const hits: string[] = [];
    const walk = (dir: string) => {
      for (const entry of readdirSync(dir, { withFileTypes: true })) {
        const full = path.join(dir, entry.name);
        if (entry.isDirectory()) walk(full);
        else if (entry.isFile() && SECRET.test(readFileSync(full, 'latin1')))
          hits.push(path.relative(ROOT, full));
      }
    };
    walk(path.join(ROOT, 'starters'));
    expect(hits).toEqual([]);
  });

  it('the research loop and its README are the same file in every starter', () => {
    for (const f of [
      'agent/research.py',
      'agent/README.md',
      'install-dryft.sh',
      'install-dryft.ps1',
      '.gitignore',
    ]) {
      const sums = STARTERS.map((s) =>
        createHash('sha256')
          .update(readFileSync(path.join(ROOT, 'starters', s, f)))
          .digest('hex'),
      );
      expect(new Set(sums).size, f).toBe(1);
    }
  });

  it.each(DECODE)(
    '%s: engine/ passes `dryft validate` (the real CLI process) and the shared archive rules',
    async (starter) => {
      const engine = path.join(ROOT, 'starters', starter, 'engine');
      const validation = await validateArchive(await packFolder(engine));
      expect(validation.problems).toEqual([]);
      if (!existsSync(CLI_BUNDLE)) return; // not built: the shared rules above are the same code the CLI runs
      const res = spawnSync(process.execPath, [CLI_BUNDLE, 'validate', '--json', engine], {
        encoding: 'utf8',
        env: { PATH: process.env.PATH, HOME: tmpdir(), NO_COLOR: '1' },
      });
      expect(res.status, res.stdout + res.stderr).toBe(0);
      expect(JSON.parse(res.stdout)).toMatchObject({ ok: true, kind: 'folder' });
    },
  );

  it('deep-recurrence: submission.py passes `dryft validate` and the single-file rules', () => {
    const file = path.join(ROOT, 'starters/deep-recurrence/submission.py');
    expect(validateSingleFile('submission.py', readFileSync(file)).ok).toBe(true);
    if (!existsSync(CLI_BUNDLE)) return;
    const res = spawnSync(process.execPath, [CLI_BUNDLE, 'validate', file], {
      encoding: 'utf8',
      env: { PATH: process.env.PATH, HOME: tmpdir(), NO_COLOR: '1' },
    });
    expect(res.status, res.stdout + res.stderr).toBe(0);
  });
});

describe('download template (GET /api/benchmarks/:id/template)', () => {
  /** The archive's entries with their modes, read from the ustar headers (and parsed by the shared reader too). */
  function entries(gz: Buffer) {
    const tar = gunzipSync(gz);
    const names: string[] = [];
    readTar(tar, (e) => names.push(e.name));
    const out: { name: string; type: string; mode: number }[] = [];
    for (let pos = 0; pos + 512 <= tar.length;) {
      const h = tar.subarray(pos, pos + 512);
      if (h.every((b) => b === 0)) break;
      const field = (o: number, n: number) =>
        h
          .subarray(o, o + n)
          .toString('utf8')
          .replace(/\0.*$/s, '');
      const prefix = field(345, 155);
      const name = prefix ? `${prefix}/${field(0, 100)}` : field(0, 100);
      const size = parseInt(field(124, 12), 8);
      out.push({
        name,
        type: field(156, 1) === '5' ? 'directory' : 'file',
        mode: parseInt(field(100, 8), 8),
      });
      pos += 512 + Math.ceil(size / 512) * 512;
    }
    expect(out.map((e) => e.name)).toEqual(names);
    return out;
  }

  it.each(STARTERS)(
    '%s: deterministic, one top folder, executable installer, every shipped file and nothing private',
    async (starter) => {
      const dir = path.join(ROOT, 'starters', starter);
      const a = await packTemplate(dir, starter);
      const b = await packTemplate(dir, starter);
      expect(a.equals(b)).toBe(true);
      const list = entries(a);
      expect(list.every((e) => e.name === `${starter}/` || e.name.startsWith(`${starter}/`))).toBe(true);
      const shipped = list.filter((e) => e.type === 'file').map((e) => e.name.slice(starter.length + 1));
      expect(shipped.sort()).toEqual(files(starter));
      expect(list.find((e) => e.name === `${starter}/install-dryft.sh`)!.mode).toBe(0o755);
      expect(list.find((e) => e.name === `${starter}/README.md`)!.mode).toBe(0o644);
    },
  );

  it('leaves out journals, work folders, bin/dryft, tokens, packaged archives and caches', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'dryft-template-'));
    try {
      const put = (rel: string, content = 'x') => {
        mkdirSync(path.dirname(path.join(dir, rel)), { recursive: true });
        writeFileSync(path.join(dir, rel), content);
      };
      for (const keep of [
        'README.md',
        'engine/engine.py',
        'agent/research.py',
        'agent/variants/a/engine.py',
        'bin/.gitkeep',
        'install-dryft.sh',
        '.gitignore',
      ])
        put(keep);
      for (const drop of [
        'agent/journal.jsonl',
        'agent/journal-2.jsonl',
        'agent/.work/current/engine.py',
        'agent/best/engine.py',
        'bin/dryft',
        'bin/dryft.cjs',
        'bin/dryft.cmd',
        'team.token',
        '.env',
        '.env.local',
        'submission.tar.gz',
        'engine/__pycache__/engine.cpython-311.pyc',
        '.DS_Store',
        '.git/config',
      ])
        put(drop);
      chmodSync(path.join(dir, 'install-dryft.sh'), 0o644); // the mode comes from the name, not the hub's disk
      const names = (await collectTemplate(dir, 'x')).filter((e) => e.type === 'file').map((e) => e.name);
      expect(names.sort()).toEqual([
        'x/.gitignore',
        'x/README.md',
        'x/agent/research.py',
        'x/agent/variants/a/engine.py',
        'x/bin/.gitkeep',
        'x/engine/engine.py',
        'x/install-dryft.sh',
      ]);
      expect(entries(await packTemplate(dir, 'x')).find((e) => e.name === 'x/install-dryft.sh')!.mode).toBe(
        0o755,
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('agent/research.py (pure parts, through python3)', () => {
  const py = (code: string, cwd = path.join(ROOT, 'starters/toy-decode')) =>
    spawnSync(PYTHON, ['-c', `import sys; sys.path.insert(0, 'agent'); import research\n${code}`], {
      cwd,
      encoding: 'buffer',
    });

  it('packs exactly what the hub accepts, deterministically', async () => {
    const res = py("sys.stdout.buffer.write(research.pack(research.read_tree('engine')))");
    expect(res.status, res.stderr.toString()).toBe(0);
    const again = py("sys.stdout.buffer.write(research.pack(research.read_tree('engine')))");
    expect(Buffer.compare(res.stdout, again.stdout)).toBe(0);
    const validation = await validateArchive(res.stdout);
    expect(validation.problems).toEqual([]);
    expect(validation.files.map((f) => f.path)).toEqual(['engine.py']);
  });

  it('uses the hub the installer recorded and names it in the error; its benchmark comes from dryft.json', async () => {
    const repo = mkdtempSync(path.join(tmpdir(), 'dryft-loop-hub-'));
    try {
      for (const f of ['dryft.json', 'agent/research.py', 'agent/config.json', 'engine/engine.py']) {
        mkdirSync(path.dirname(path.join(repo, f)), { recursive: true });
        writeFileSync(path.join(repo, f), readFileSync(path.join(ROOT, 'starters/toy-decode', f)));
      }
      mkdirSync(path.join(repo, 'bin'));
      // a port nothing listens on: the loop must try this hub, not localhost:3000
      const dead = await new Promise<number>((resolve) => {
        const srv = createServer().listen(0, '127.0.0.1', () => {
          const port = (srv.address() as { port: number }).port;
          srv.close(() => resolve(port));
        });
      });
      writeFileSync(path.join(repo, 'bin/dryft-hub.txt'), `http://127.0.0.1:${dead}\n`);
      const res = spawnSync(
        PYTHON,
        ['agent/research.py', '--iterations', '1', '--retries', '0', '--builtin-validate'],
        {
          cwd: repo,
          encoding: 'utf8',
          env: { PATH: process.env.PATH, HOME: repo, DRYFT_TOKEN: generateToken('pat') },
        },
      );
      expect(res.status, res.stdout + res.stderr).toBe(2);
      expect(res.stderr).toContain(`cannot reach http://127.0.0.1:${dead}`);
      expect(res.stderr).toContain(
        `research: hub http://127.0.0.1:${dead} (from bin/dryft-hub.txt (recorded by install-dryft))`,
      );
      expect(res.stdout + res.stderr).not.toContain('localhost:3000');
      const dry = spawnSync(PYTHON, ['agent/research.py', '--dry-run', '--iterations', '1'], {
        cwd: repo,
        encoding: 'utf8',
        env: { PATH: process.env.PATH, HOME: repo },
      });
      expect(dry.status, dry.stderr).toBe(0);
      expect(dry.stdout + dry.stderr).toContain('toy-decode');
    } finally {
      rmSync(repo, { recursive: true, force: true });
    }
  });

  it('its built-in rules refuse what the hub refuses', () => {
    const res = py(
      [
        'bad = {"main.py": b"x", "lib.so": b"\\x7fELF", "A.py": b"", "a.py": b"", "._x.py": b"", "../up.py": b"", "big.txt": b"\\xff"}',
        'print("\\n".join(research.check_archive_rules(bad)))',
        'print("SECRETS", research.find_secrets({"n.md": b"' +
          generateToken('pat') +
          '", "ok.md": b"dryft_pat_REPLACE_ME"}))',
      ].join('\n'),
    );
    expect(res.status, res.stderr.toString()).toBe(0);
    const out = res.stdout.toString();
    for (const rule of [
      'entrypoint:',
      'extensions: lib.so',
      'unique_names:',
      'text: ._x.py',
      'paths:',
      'text: big.txt',
    ])
      expect(out).toContain(rule);
    expect(out).toContain("SECRETS ['n.md']");
  });
});
