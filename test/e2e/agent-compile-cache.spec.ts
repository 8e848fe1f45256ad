import type { RunAssign, RunBatch, RunFinished } from '@dryft/libs';
import { collectFolder, packFiles } from '@dryft/libs/node';
import { createHash, randomUUID } from 'node:crypto';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  realpathSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { createServer, Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AgentConfig } from '../../apps/gpu-agent/src/config';
import { agentConfig } from '../../apps/gpu-agent/test/builders';
import { RunJob } from '../../apps/gpu-agent/src/run-job';
import type { RunHost } from '../../apps/gpu-agent/src/run-job';
import { probeSandbox } from '../../apps/gpu-agent/src/sandbox';

/**
 * The candidate's persistent compile cache through the real agent and the real harness, sandboxed
 * (the agent's bubblewrap, each engine child in its own jail), on the CPU with the toy model: a
 * RunJob per run with a fake hub. The toy engine writes a file where TORCHINDUCTOR_CACHE_DIR points
 * and prints what it found there: the same team finds it in its next run, another team finds
 * nothing, and after the benchmark's rules version changes it is gone. Needs root and bubblewrap
 * (the engine's own uid), as test/e2e/sandbox.spec.ts.
 */
const ROOT = path.resolve(__dirname, '..', '..');
const sandbox = probeSandbox();
const ok = sandbox.ok && process.getuid?.() === 0;
if (!ok)
  console.warn(`\n[tests] SKIPPING the compile cache through the sandbox: ${sandbox.reason}, root needed\n`);

/** A host folder the engines' links point at: deleting their caches must leave it whole. */
const SENTINEL = path.join(tmpdir(), `dryft-ccrun-sentinel-${process.pid}`);
const PRELUDE = `
import os as _os
_d = _os.environ.get("TORCHINDUCTOR_CACHE_DIR", "")
_f = _os.path.join(_d, "kernel.bin")
print("CACHE " + ("found " + open(_f).read() if _d and _os.path.exists(_f) else "empty"), flush=True)
_os.makedirs(_d, exist_ok=True)
with open(_f, "w") as _fh:
    _fh.write(open(_os.path.join(_os.path.dirname(_os.path.abspath(__file__)), "team.txt")).read())
# a link out of the cache: whatever the agent does with the folder later must not follow it
if not _os.path.lexists(_os.path.join(_d, "escape")):
    _os.symlink(${JSON.stringify(SENTINEL)}, _os.path.join(_d, "escape"))
# a folder the harness (no CAP_DAC_OVERRIDE) cannot enter until it makes it its own
_os.makedirs(_os.path.join(_d, "locked"), exist_ok=True)
_os.chmod(_os.path.join(_d, "locked"), 0)
# the run's copy of the cache is a tmpfs of limits.workspaceBytes: it cannot fill the agent's disk
try:
    with open(_os.path.join(_d, "huge.bin"), "wb") as _fh:
        _fh.write(b"x" * (24 << 20))
    print("BOUND none", flush=True)
except OSError as _e:
    print(f"BOUND errno {_e.errno}", flush=True)
_os.unlink(_os.path.join(_d, "huge.bin"))
`;

let server: Server;
let apiUrl: string;
let workDir: string;
const archives = new Map<string, Buffer>();
beforeAll(async () => {
  if (!ok) return;
  const engine = await collectFolder(path.join(ROOT, 'starters', 'toy-decode', 'engine'));
  for (const team of ['team-a', 'team-b'])
    archives.set(
      team,
      await packFiles([
        ...engine.map((f) =>
          f.name === 'engine.py'
            ? { name: f.name, content: Buffer.from(`${PRELUDE}\n${Buffer.from(f.content).toString('utf8')}`) }
            : f,
        ),
        { name: 'team.txt', content: Buffer.from(`compiled by ${team}`) },
      ]),
    );
  server = createServer((req, res) => res.end(archives.get(String(req.url).slice('/dl/'.length))));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  apiUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  workDir = realpathSync(mkdtempSync(path.join(tmpdir(), 'dryft-ccrun-')));
});
afterAll(async () => {
  if (server) await new Promise((r) => server.close(r));
  if (workDir) rmSync(workDir, { recursive: true, force: true });
});

function assign(team: string, rulesVersion: number): RunAssign {
  const bytes = archives.get(team)!;
  return {
    runId: randomUUID(),
    benchmarkId: 'toy-decode',
    mode: 'public',
    slot: 0,
    teamId: team,
    submission: {
      url: `/dl/${team}`,
      sha256: createHash('sha256').update(bytes).digest('hex'),
      kind: 'archive',
      filename: 'submission.tar.gz',
    },
    spec: {
      kind: 'decode',
      benchmark: 'toy-decode',
      mode: 'public',
      rulesVersion,
      model: { family: 'toy', path: 'models/toy' },
      baselineEngine: 'starters/toy-decode/engine',
      workloads: [{ name: 'w', batchSize: 1, promptLength: 8, maxNewTokens: 4, seed: 7 }],
      samplesPerWorkload: 1,
      warmupSamples: 0,
      limits: {
        loadSeconds: 20,
        sampleSeconds: 10,
        runSeconds: 60,
        memoryBytes: null,
        memoryMeasure: 'none',
      },
      checks: { maxTtftMs: null, maxTpotMs: null, maxRatioSpreadPct: 1000, logitTolerance: 0 },
      baseline: { hardware: 'cpu', workloads: { w: { totalMs: 5, ttftMs: 1, tpotMs: 0.5 } } },
    },
    deadlineAt: Date.now() + 120_000,
  };
}

function config(maxBytesPerSlot = 64 << 20): AgentConfig {
  return agentConfig({
    apiUrl,
    harness: { python: process.env.HARNESS_PYTHON ?? '/usr/bin/python3', dir: path.join(ROOT, 'harness') },
    workDir,
    repoDir: ROOT,
    limits: { processes: 512, openFiles: 4096, memoryBytes: 512 * 1024 * 1024, workspaceBytes: 16 << 20 },
    compileCache: { maxBytesPerSlot },
  });
}

/** One run through RunJob against a fake hub: its verdict and its log lines. */
async function run(team: string, rulesVersion: number, maxBytesPerSlot?: number) {
  const batches: RunBatch[] = [];
  const finished: RunFinished[] = [];
  const h: RunHost = {
    config: config(maxBytesPerSlot),
    sandboxed: true,
    connected: () => true,
    sendBatch: async (b) => {
      if (!batches.some((x) => x.seq === b.seq)) batches.push(b);
      return { ok: true, ackedSeq: b.seq };
    },
    started: async () => undefined,
    finished: async (msg) => void finished.push(msg),
    handback: async () => false,
    log: () => undefined,
  };
  await new RunJob(assign(team, rulesVersion), h, []).execute();
  const lines = batches
    .flatMap((b) => b.entries)
    .filter((e) => e.type === 'log')
    .map((e) => (e as unknown as { text: string }).text);
  const why = `${JSON.stringify(finished[0]?.result)}\n${lines.join('\n')}`;
  expect(finished[0]?.result.status, why).toBe('succeeded');
  return { lines, why, cache: lines.filter((l) => l.startsWith('CACHE ')) };
}

describe('the candidate compile cache through the agent and the harness', () => {
  it.skipIf(!ok)(
    "persists between one team's runs, never crosses to another team, and goes with a rules change",
    async () => {
      mkdirSync(SENTINEL, { recursive: true });
      writeFileSync(path.join(SENTINEL, 'precious'), 'host file');
      const first = await run('team-a', 1);
      expect(first.cache, first.why).toEqual(['CACHE empty']);
      expect(first.lines.join('\n')).toContain(
        "compile cache: the candidate's compile caches persist between this team's runs of toy-decode (rules version 1) on slot 0",
      );
      expect(first.lines.join('\n')).toContain('kept between its runs of this benchmark and rules version');
      expect(first.lines.filter((l) => l.startsWith('BOUND '))).toEqual(['BOUND errno 28']);
      expect(first.lines.join('\n')).toMatch(
        /saved its compile cache for this team's next run \(\d+ bytes\)/,
      );
      const saved = path.join(workDir, 'compile-cache', 'slot-0', 'toy-decode', 'rules-1', 'team-a', 'cache');
      // regular files and folders only: the link the engine made was not kept
      expect(readdirSync(path.join(saved, 'current', 'inductor')).sort()).toEqual(['kernel.bin', 'locked']);

      const again = await run('team-a', 1);
      expect(again.cache, again.why).toEqual(['CACHE found compiled by team-a']);

      const other = await run('team-b', 1);
      expect(other.cache, other.why).toEqual(['CACHE empty']);
      const teamA = await run('team-a', 1);
      expect(teamA.cache, teamA.why).toEqual(['CACHE found compiled by team-a']); // b's run left a's alone

      const bumped = await run('team-a', 2);
      expect(bumped.cache, bumped.why).toEqual(['CACHE empty']);
      expect(bumped.lines.join('\n')).toContain("deleted this slot's caches of toy-decode rules-1");
      const slot = path.join(workDir, 'compile-cache', 'slot-0', 'toy-decode');
      expect(readdirSync(slot)).toEqual(['rules-2']);
      // the link the engine left pointed at a host folder: deleting its cache did not follow it
      expect(readdirSync(SENTINEL)).toEqual(['precious']);
      rmSync(SENTINEL, { recursive: true });
    },
    240_000,
  );

  it.skipIf(!ok)(
    "a team's cache over the slot's bound: deleted, the run goes on with an empty cache, and the log says so",
    async () => {
      const warm = await run('team-a', 3);
      expect(warm.cache, warm.why).toEqual(['CACHE empty']);
      const cache = path.join(workDir, 'compile-cache', 'slot-0', 'toy-decode', 'rules-3', 'team-a', 'cache');
      writeFileSync(path.join(cache, 'current', 'inductor', 'huge.bin'), Buffer.alloc(256 * 1024, 1));
      const r = await run('team-a', 3, 128 * 1024);
      expect(r.cache, r.why).toEqual(['CACHE empty']);
      const text = r.lines.join('\n');
      expect(text).toContain(
        "compile cache: this team's cache alone was over the slot's bound of 131072 bytes: deleted",
      );
      expect(text).toMatch(
        /compile cache: the candidate compiles from an empty cache \(its cache was over the slot's bound/,
      );
      expect(text).toContain('start empty in this run');
      expect(existsSync(path.dirname(cache))).toBe(false);
    },
    120_000,
  );
});
