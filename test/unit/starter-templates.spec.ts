import { spawnSync } from 'node:child_process';
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
import {
  collectStarter,
  generateToken,
  loadBenchmarkDefinitions,
  packFolder,
  validateArchive,
  writeStarter,
} from '@dryft/libs/node';
import { collectTemplate, packTemplate } from '../../apps/api/src/submissions/template-archive';

/**
 * The starter repositories (starters/*, each with the shared files of starters/_shared laid over
 * it): what a participant copies with "Use this template" or "Download template". Their engines must pass the hub's own rules, through the real CLI process
 * when it is built; every file must be an allowed type or a documented exception outside the
 * submitted folder (docs/STARTERS.md); and no credential may be anywhere in them.
 */
const ROOT = path.resolve(__dirname, '../..');
const SHARED = path.join(ROOT, 'starters/_shared');
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

/** The files of starters/_shared: laid over every starter repository, kept once in git. */
function sharedFiles(): string[] {
  const out: string[] = [];
  const walk = (dir: string, rel: string) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const r = rel ? `${rel}/${entry.name}` : entry.name;
      if (entry.isDirectory()) walk(path.join(dir, entry.name), r);
      else out.push(r);
    }
  };
  walk(SHARED, '');
  return out.sort();
}

/** The starter's files as the template ships them: its own folder with starters/_shared laid over it. */
async function files(starter: string): Promise<string[]> {
  return (await collectStarter(path.join(ROOT, 'starters', starter))).map((f) => f.path);
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
  it.each(STARTERS)('%s has the whole first-run tree', async (starter) => {
    const have = await files(starter);
    for (const f of REQUIRED) expect(have, `${starter}/${f}`).toContain(f);
    expect(statSync(path.join(SHARED, 'install-dryft.sh')).mode & 0o111).not.toBe(0);
  });

  it.each(STARTERS)(
    '%s: every file is an allowed type or a documented exception outside the submitted folder',
    async (starter) => {
      const submitted = starter === 'deep-recurrence' ? 'submission.py' : 'engine/';
      for (const f of await files(starter)) {
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

  it.each(STARTERS)(
    '%s: the built starter holds every shared file byte for byte, and the starter folder in git holds none',
    async (starter) => {
      const shared = sharedFiles();
      expect(shared).toEqual(
        expect.arrayContaining(['agent/research.py', 'agent/README.md', 'install-dryft.sh', '.gitignore']),
      );
      const built = new Map(
        (await collectStarter(path.join(ROOT, 'starters', starter))).map((f) => [f.path, f]),
      );
      for (const f of shared) {
        expect(built.get(f)?.content.equals(readFileSync(path.join(SHARED, f))), `${starter}/${f}`).toBe(
          true,
        );
        expect(
          existsSync(path.join(ROOT, 'starters', starter, f)),
          `starters/${starter}/${f} is a copy`,
        ).toBe(false);
      }
      const tracked = spawnSync('git', ['ls-files', '--', ...shared.map((f) => `starters/${starter}/${f}`)], {
        cwd: ROOT,
        encoding: 'utf8',
      });
      if (tracked.status === 0) expect(tracked.stdout.trim(), 'copies of shared files in git').toBe('');
      expect(built.get('install-dryft.sh')!.executable).toBe(true);
    },
  );

  it('the overlay: a copy of a shared file in a starter is refused; a folder without dryft.json gets none', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'dryft-overlay-'));
    try {
      const put = (rel: string, content = 'x') => {
        mkdirSync(path.dirname(path.join(dir, rel)), { recursive: true });
        writeFileSync(path.join(dir, rel), content);
      };
      put('_shared/agent/research.py', 'shared');
      put('_shared/install-dryft.sh', '#!/bin/sh');
      put('mine/dryft.json', '{"benchmark": "toy-decode"}');
      put('mine/engine/engine.py');
      put('sample/submission.py');
      const mine = await collectStarter(path.join(dir, 'mine'));
      expect(mine.map((f) => f.path)).toEqual([
        'agent/research.py',
        'dryft.json',
        'engine/engine.py',
        'install-dryft.sh',
      ]);
      expect((await collectStarter(path.join(dir, 'sample'))).map((f) => f.path)).toEqual(['submission.py']);
      // what the built folder (scripts/build-starters.mjs) holds is the same, with the installer executable
      const out = path.join(dir, 'built');
      await writeStarter(path.join(dir, 'mine'), out);
      expect(readFileSync(path.join(out, 'agent/research.py'), 'utf8')).toBe('shared');
      expect(statSync(path.join(out, 'install-dryft.sh')).mode & 0o111).not.toBe(0);
      put('mine/agent/research.py', 'a second copy');
      await expect(collectStarter(path.join(dir, 'mine'))).rejects.toThrow(
        /agent\/research\.py is in both .*mine and .*_shared: a shared file has one copy/,
      );
      await expect(collectStarter(path.join(dir, '_shared'))).rejects.toThrow(/shared folder itself/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
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
      expect(shipped.sort()).toEqual(await files(starter));
      for (const f of sharedFiles()) expect(shipped, `${starter} template ships ${f}`).toContain(f);
      expect(list.find((e) => e.name === `${starter}/install-dryft.sh`)!.mode).toBe(0o755);
      expect(list.find((e) => e.name === `${starter}/README.md`)!.mode).toBe(0o644);
    },
  );

  it('names the hub that hands it out in dryft.json; the rest of the file is the starter’s', async () => {
    const dir = path.join(ROOT, 'starters', 'toy-decode');
    const gz = await packTemplate(dir, 'toy-decode', { hub: 'http://127.0.0.1:4123' });
    const files = new Map<string, string>();
    readTar(gunzipSync(gz), (e) => {
      if (e.type === 'file') files.set(e.name, Buffer.from(e.content).toString('utf8'));
    });
    const own = JSON.parse(readFileSync(path.join(dir, 'dryft.json'), 'utf8'));
    expect(JSON.parse(files.get('toy-decode/dryft.json')!)).toEqual({ ...own, hub: 'http://127.0.0.1:4123' });
    // the same hub, the same bytes
    expect(gz.equals(await packTemplate(dir, 'toy-decode', { hub: 'http://127.0.0.1:4123' }))).toBe(true);
  });

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

describe('agent/research.py drives the starter’s bin/dryft', () => {
  /** A built toy-decode starter (its folder with starters/_shared laid over it) in a temporary folder. */
  async function repo(): Promise<string> {
    const dir = path.join(mkdtempSync(path.join(tmpdir(), 'dryft-loop-')), 'toy-decode');
    await writeStarter(path.join(ROOT, 'starters/toy-decode'), dir);
    return dir;
  }
  const launcher = (dir: string, script: string) => {
    mkdirSync(path.join(dir, 'bin'), { recursive: true });
    writeFileSync(path.join(dir, 'bin/dryft'), script, { mode: 0o755 });
  };
  /** bin/dryft as install-dryft.sh writes it, running this checkout's bundled CLI. */
  const realCli = (dir: string) =>
    launcher(dir, `#!/bin/sh\nexec ${JSON.stringify(process.execPath)} ${JSON.stringify(CLI_BUNDLE)} "$@"\n`);
  const loop = (dir: string, args: string[], env: NodeJS.ProcessEnv = {}) =>
    spawnSync(PYTHON, ['agent/research.py', ...args], {
      cwd: dir,
      encoding: 'utf8',
      env: { PATH: process.env.PATH, HOME: dir, DRYFT_RETRY_BASE_MS: '20', ...env },
    });
  const journal = (dir: string) =>
    readFileSync(path.join(dir, 'agent/journal.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
  const cleanup = (dir: string) => rmSync(path.dirname(dir), { recursive: true, force: true });

  it('refuses to start without bin/dryft and says how to install it', async () => {
    const dir = await repo();
    try {
      const res = loop(dir, ['--dry-run']);
      expect(res.status, res.stdout + res.stderr).toBe(2);
      expect(res.stderr).toContain('bin/dryft is not installed: run ./install-dryft.sh');
      expect(existsSync(path.join(dir, 'agent/journal.jsonl'))).toBe(false);
    } finally {
      cleanup(dir);
    }
  });

  it.skipIf(!existsSync(CLI_BUNDLE))(
    '--dry-run: validated and packaged by bin/dryft, exactly what the hub accepts, the same bytes every time',
    async () => {
      const dir = await repo();
      try {
        realCli(dir);
        const first = loop(dir, ['--dry-run', '--iterations', '1']);
        expect(first.status, first.stdout + first.stderr).toBe(0);
        expect(first.stdout).toContain('current: dryft validate passed');
        expect(first.stdout + first.stderr).toContain('toy-decode');
        const packed = readFileSync(path.join(dir, 'agent/.work/current.tar.gz'));
        const validation = await validateArchive(packed);
        expect(validation.problems).toEqual([]);
        expect(validation.files.map((f) => f.path)).toEqual(['engine.py']);
        expect(packed.equals(await packFolder(path.join(dir, 'engine')))).toBe(true);
        expect(loop(dir, ['--dry-run', '--iterations', '1']).status).toBe(0);
        expect(readFileSync(path.join(dir, 'agent/.work/current.tar.gz')).equals(packed)).toBe(true);
      } finally {
        cleanup(dir);
      }
    },
    60_000, // a few starts of the bundled CLI on a busy machine
  );

  it.skipIf(!existsSync(CLI_BUNDLE))(
    'what bin/dryft validate refuses, and anything holding a token, is journaled as refused and never uploaded',
    async () => {
      const dir = await repo();
      try {
        realCli(dir);
        const variant = (name: string, file: string, content: string) => {
          mkdirSync(path.join(dir, 'agent/variants', name), { recursive: true });
          writeFileSync(path.join(dir, 'agent/variants', name, file), content);
        };
        variant('a-binary', 'lib.so', '\x7fELF');
        variant('b-token', 'notes.md', `export DRYFT_TOKEN=${generateToken('pat')}\n`);
        const res = loop(dir, ['--dry-run', '--iterations', '4']);
        expect(res.status, res.stdout + res.stderr).toBe(0);
        const refused = journal(dir).filter((r) => r.phase === 'refused');
        expect(refused.map((r) => r.variant)).toEqual(['a-binary', 'b-token']);
        expect(String(refused[0].reason)).toMatch(/dryft validate refused it:[\s\S]*FAIL\s+extensions/);
        expect(String(refused[1].reason)).toContain('a credential-like string is in notes.md');
        expect(existsSync(path.join(dir, 'agent/.work/a-binary.tar.gz'))).toBe(false);
      } finally {
        cleanup(dir);
      }
    },
    60_000, // a few starts of the bundled CLI on a busy machine
  );

  it.skipIf(!existsSync(CLI_BUNDLE))(
    'uses the hub the installer recorded and names it in the error; its benchmark comes from dryft.json',
    async () => {
      const dir = await repo();
      try {
        realCli(dir);
        // a port nothing listens on: the loop must try this hub, not localhost:3000
        const dead = await new Promise<number>((resolve) => {
          const srv = createServer().listen(0, '127.0.0.1', () => {
            const port = (srv.address() as { port: number }).port;
            srv.close(() => resolve(port));
          });
        });
        writeFileSync(path.join(dir, 'bin/dryft-hub.txt'), `http://127.0.0.1:${dead}\n`);
        const res = loop(dir, ['--iterations', '1', '--retries', '0'], { DRYFT_TOKEN: generateToken('pat') });
        expect(res.status, res.stdout + res.stderr).toBe(2);
        expect(res.stderr).toContain(`cannot reach http://127.0.0.1:${dead}`);
        expect(res.stderr).toContain(
          `research: hub http://127.0.0.1:${dead} (from bin/dryft-hub.txt (recorded by install-dryft))`,
        );
        expect(res.stdout + res.stderr).not.toContain('localhost:3000');
        expect(res.stdout).toContain('benchmark toy-decode (from dryft.json)');
      } finally {
        cleanup(dir);
      }
    },
    60_000, // a few starts of the bundled CLI on a busy machine
  );

  /**
   * A stand-in bin/dryft that answers as the CLI does with --json (python3, so no hub is needed):
   * it logs every call, and `run` answers what FAKE_RUN says, in turn.
   */
  const FAKE = String.raw`#!/usr/bin/env python3
import json, os, sys
args = sys.argv[1:]
with open(os.environ["FAKE_CALLS"], "a") as fh:
    fh.write(json.dumps(args) + "\n")
cmd = [a for a in args if not a.startswith("-")][0] if args else ""
if "--api-url" in args:
    cmd = [a for i, a in enumerate(args) if not a.startswith("-") and args[i - 1] != "--api-url"][0]
def out(o, rc=0):
    print(json.dumps(o)); sys.exit(rc)
if cmd == "validate":
    sys.exit(0)
if cmd == "package":
    target = args[args.index("--output") + 1]
    open(target, "wb").write(b"archive")
    out({"ok": True, "output": target, "bytes": 7, "sha256": "x", "files": [{"path": "engine.py", "size": 1}]})
if cmd == "submit":
    out({"submission": {"id": "sub-1", "name": "engine #1"}, "verdicts": []})
if cmd == "run":
    answers = os.environ["FAKE_RUN"].split(",")
    n = sum(1 for l in open(os.environ["FAKE_CALLS"]) if '"run"' in l) - 1
    a = answers[min(n, len(answers) - 1)]
    if a == "network":
        print(json.dumps({"error": {"code": "network", "message": "Cannot reach the Dryft API", "exitCode": 4}}, indent=2)); sys.exit(4)
    if a == "limit":
        print(json.dumps({"error": {"code": "daily_limit_reached", "status": 429, "message": "Today's public runs are used.", "exitCode": 2}}, indent=2)); sys.exit(2)
    out({"run": {"id": "run-1", "status": "queued"}, "quota": {}})
if cmd == "logs":
    print(json.dumps({"seq": 1, "ts": 0, "stream": "harness", "text": "measuring"}))
    out({"run": {"id": "run-1", "status": "succeeded", "failureCode": None, "message": None, "score": 101.5}})
if cmd == "result":
    out({"run": {"id": "run-1", "status": "succeeded"}, "score": 101.5, "workloads": [{"workload": "w"}], "checks": [{"name": "output", "passed": True, "detail": "exact"}], "detail": None})
sys.exit(9)
`;

  it('starts the run with the journaled Idempotency-Key, the same on a repeat and after a restart; a daily limit stops the loop', async () => {
    const dir = await repo();
    try {
      launcher(dir, FAKE);
      const calls = path.join(dir, 'calls.jsonl');
      const env = { DRYFT_TOKEN: generateToken('pat'), DRYFT_API_URL: 'http://hub.test', FAKE_CALLS: calls };
      const first = loop(dir, ['--iterations', '1', '--retries', '1', '--quiet'], {
        ...env,
        FAKE_RUN: 'network,limit',
      });
      expect(first.status, first.stdout + first.stderr).toBe(1);
      expect(first.stdout).toContain('the hub http://hub.test refused it');
      const [intent, refused] = journal(dir);
      expect(intent).toMatchObject({ phase: 'intent', variant: 'current', submissionId: 'sub-1' });
      expect(refused).toMatchObject({ phase: 'refused', variant: 'current' });
      expect(String(refused.reason)).toContain('daily_limit_reached');
      const argv = () =>
        readFileSync(calls, 'utf8')
          .trim()
          .split('\n')
          .map((l) => JSON.parse(l) as string[]);
      const keysOf = (list: string[][]) =>
        list.filter((a) => a.includes('run')).map((a) => a[a.indexOf('--idempotency-key') + 1]);
      expect(keysOf(argv())).toEqual([intent.idempotencyKey, intent.idempotencyKey]);
      expect(argv().every((a) => a.includes('--api-url') && a.includes('http://hub.test'))).toBe(true);
      expect(JSON.stringify(argv())).not.toContain(env.DRYFT_TOKEN);

      // a restart with an intent and no outcome: no second upload, the same key, followed to the end
      writeFileSync(path.join(dir, 'agent/journal.jsonl'), JSON.stringify(intent) + '\n');
      rmSync(calls);
      const again = loop(dir, ['--iterations', '1'], { ...env, FAKE_RUN: 'ok' });
      expect(again.status, again.stdout + again.stderr).toBe(0);
      expect(again.stdout).toContain(
        `resuming the run intended earlier (Idempotency-Key ${intent.idempotencyKey})`,
      );
      expect(again.stdout).toContain('  | measuring');
      expect(argv().some((a) => a.includes('submit'))).toBe(false);
      expect(keysOf(argv())).toEqual([intent.idempotencyKey]);
      const finished = journal(dir).find((r) => r.phase === 'finished')!;
      expect(finished).toMatchObject({
        runId: 'run-1',
        status: 'succeeded',
        score: 101.5,
        idempotencyKey: intent.idempotencyKey,
        best: true,
        checks: [{ name: 'output', passed: true, detail: 'exact' }],
      });
      expect(readFileSync(path.join(dir, 'agent/.work/current.log'), 'utf8')).toBe('measuring\n');
      expect(readFileSync(path.join(dir, 'agent/best/engine.py'))).toEqual(
        readFileSync(path.join(dir, 'engine/engine.py')),
      );
    } finally {
      cleanup(dir);
    }
  }, 60_000);
});
