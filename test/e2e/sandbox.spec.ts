import { mkdirSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { probeSandbox } from '../../apps/gpu-agent/src/sandbox';
import {
  AgentProc,
  ApiProc,
  HttpUser,
  spawnAgent,
  startApi,
  stopProc,
  terminal,
  toyEngineWith,
} from '../support/agent-helpers';
import { createTestDatabase } from '../support/db';
import { available } from '../support/prerequisites';
import { freePort, ROOT } from '../support/quickstart';

/**
 * The attack corpus through the real agent (issue 21): hostile engines run by the local agent in
 * bubblewrap, the harness parent in the agent's sandbox and each engine child in its own jail
 * (harness/harness/jail.py). Each attack states its expected verdict. The harness-level corpus
 * (ptrace, process_vm_readv, seccomp) is harness/tests/test_jail.py; this one adds what only the
 * agent's allowlist decides: the host's /tmp, the checkout, the hub's data and database, /proc/1.
 */
describe('the sandbox against hostile engines (through the real agent)', () => {
  let db: { url: string; drop: () => Promise<void> };
  let api: ApiProc;
  let agent: AgentProc | undefined;
  let dataDir: string;
  let owner: HttpUser;
  const sentinel = `/tmp/dryft-sentinel-${process.pid}-${Date.now()}`;
  const sandbox = probeSandbox();
  available('bubblewrap with namespaces', sandbox.ok, `${sandbox.reason}; apt-get install bubblewrap`);
  const ok = sandbox.ok && process.getuid?.() === 0;
  if (sandbox.ok && !ok)
    console.warn(
      '\n[tests] SKIPPING the sandbox attack corpus: it checks the engine uid, so it runs as root\n',
    );

  beforeAll(async () => {
    if (!ok) return;
    db = await createTestDatabase();
    dataDir = path.join(ROOT, '.data', 'test', `sandbox-${process.pid}-${Date.now()}`);
    mkdirSync(dataDir, { recursive: true });
    writeFileSync(sentinel, 'a session token of the hub');
    api = await startApi({ dbUrl: db.url, port: await freePort(), dataDir, env: { ADMIN_LOGINS: 'org' } });
    const org = await HttpUser.signIn(api.url, 'org');
    owner = await HttpUser.signIn(api.url, 'sandbox-owner');
    await owner.createTeam();
    const created = await org.createAgent('box-sandbox');
    agent = spawnAgent({
      apiUrl: api.url,
      token: created.token,
      dir: path.join(dataDir, 'agent'),
      config: {
        limits: { processes: 128, memoryBytes: 512 * 1024 * 1024, workspaceBytes: 64 * 1024 * 1024 },
      },
    });
  }, 60_000);
  afterAll(async () => {
    await stopProc(agent, 'SIGKILL');
    await stopProc(api);
    await db?.drop().catch(() => undefined);
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
    try {
      unlinkSync(sentinel);
    } catch {
      /* not made */
    }
  });

  /** A fresh agent with these settings (the previous one stopped), and one run of a clean engine. */
  const verdictWith = async (name: string, config: Record<string, unknown>) => {
    await stopProc(agent, 'SIGKILL');
    const org = await HttpUser.signIn(api.url, 'org');
    agent = spawnAgent({
      apiUrl: api.url,
      token: (await org.createAgent(`box-${name}`)).token,
      dir: path.join(dataDir, `agent-${name}`),
      config,
    });
    return (await run('')).done;
  };

  const run = async (prelude: string) => {
    const started = await owner.startRun(await owner.upload(await toyEngineWith(prelude)));
    const done = await owner.waitFor(started.id, terminal, 90_000);
    const logs = (await owner.allLogs(started.id)).map((l) => l.text);
    return { done, logs, text: logs.join('\n'), why: `${JSON.stringify(done)}\n${logs.join('\n')}` };
  };

  it.skipIf(!ok)(
    'sees no host /tmp, checkout, hub data or database, root-only file, parent memory or sandbox command line',
    async () => {
      const r = await run(`
import glob as _g, os as _os, socket as _s
def _probe(name, fn):
    try:
        print(f"PROBE {name}: EXPOSED {fn()!r}"[:400], flush=True)
    except Exception as _e:
        print(f"PROBE {name}: contained ({type(_e).__name__})", flush=True)
def _nonempty(x):
    if not x:
        raise LookupError("nothing")
    return x
def _unix(path):
    c = _s.socket(_s.AF_UNIX)
    c.connect(path)
    return path
_probe("uid-is-root", lambda: _nonempty(_os.getuid() == 0))
_probe("etc-shadow", lambda: open("/etc/shadow").read(20))
_probe("host-tmp", lambda: _nonempty([n for n in _os.listdir("/tmp") if n.startswith(("dryft-sentinel", ".s.PGSQL", "dryft-ev"))]))
_probe("checkout", lambda: _nonempty([n for n in _os.listdir(${JSON.stringify(ROOT)}) if n not in ("harness", "starters", "models")]))
_probe("hub-data", lambda: _os.listdir(${JSON.stringify(path.join(ROOT, '.data'))}))
_probe("pg-socket", lambda: [_unix(p) for p in _nonempty(_g.glob("/tmp/.s.PGSQL.*") + _g.glob("/var/run/postgresql/.s.PGSQL.*") + _g.glob("/run/postgresql/.s.PGSQL.*") + _g.glob(${JSON.stringify(ROOT)} + "/.data/**/.s.PGSQL.*", recursive=True))])
_probe("pg-tcp", lambda: _s.create_connection(("127.0.0.1", 5432), timeout=2) and "connected")
_probe("sandbox-cmdline", lambda: _nonempty([w for w in ("bwrap", "spec.json", "private", "--ro-bind") if w in open("/proc/1/cmdline").read()]))
def _mem(pid):
    start = int(open(f"/proc/{pid}/maps").readline().split("-")[0], 16)
    with open(f"/proc/{pid}/mem", "rb") as m:
        m.seek(start)
        return len(m.read(4096))
_probe("parent-mem", lambda: _mem(_nonempty(_os.getppid())))
_probe("parent-environ", lambda: open(f"/proc/{_nonempty(_os.getppid())}/environ", "rb").read(200))
`);
      const probes = r.logs.filter((l) => l.startsWith('PROBE '));
      expect(probes.length, r.why).toBe(10);
      expect(
        probes.filter((l) => l.includes('EXPOSED')),
        r.why,
      ).toEqual([]);
      expect(r.done.status, r.why).toBe('succeeded');
    },
  );

  it.skipIf(!ok)(
    'an engine that signals its parent and everything it can see leaves the harness intact',
    async () => {
      const r = await run(`
import os as _os, signal as _sig
# Only inside a fresh pid namespace (a low pid): never a sweep of the machine if the sandbox failed.
if _os.getpid() < 50:
    if _os.getppid() > 0:
        _os.kill(_os.getppid(), _sig.SIGKILL)
    try:
        _os.kill(-1, _sig.SIGKILL)
    except OSError:
        pass
print("SIGNALS: sent", flush=True)
`);
      expect(r.text, r.why).toContain('SIGNALS: sent');
      expect(r.done.status, r.why).toBe('succeeded');
    },
  );

  it.skipIf(!ok)('a fork bomb ends as candidate_error: process limit reached', async () => {
    const r = await run(`
import os as _os, time as _t
for _i in range(3000):
    if _os.fork() == 0:
        _t.sleep(60)
        _os._exit(0)
raise RuntimeError("ATTACK WORKED: 3000 processes")
`);
    expect(r.done.failureCode, r.why).toBe('candidate_error');
    expect(r.done.message, r.why).toContain('process limit was reached (limit 128');
  });

  it.skipIf(!ok)(
    "memory exhaustion without a definition limit ends as memory_limit (the agent's default)",
    async () => {
      const r = await run(`
_hoard = [bytearray(256 << 20) for _ in range(8)]
raise RuntimeError("ATTACK WORKED: 2 GiB held")
`);
      expect(r.done.failureCode, r.why).toBe('memory_limit');
      expect(r.done.message, r.why).toContain('memory limit (512 MiB)');
    },
  );

  it.skipIf(!ok)('disk exhaustion ends as candidate_error: workspace is full', async () => {
    const r = await run(`
import os as _os
_n = 0
with open(_os.path.join(_os.getcwd(), "fill"), "wb") as _f:
    while _n < (256 << 20):
        _f.write(b"x" * (8 << 20))
        _f.flush()
        _n += 8 << 20
raise RuntimeError("ATTACK WORKED: 256 MiB written")
`);
    expect(r.done.failureCode, r.why).toBe('candidate_error');
    expect(r.done.message, r.why).toContain('workspace is full (limit 64 MiB');
    // The hub and the agent keep working: a clean engine runs right after.
    const clean = await run('');
    expect(clean.done.status, clean.why).toBe('succeeded');
  });

  it.skipIf(!ok)(
    "a harness that dies without a verdict is the candidate's failure only while the candidate runs",
    async () => {
      // Stand-in harnesses (harness.command): each says which child runs, then dies without a verdict.
      const dies = (role: string) =>
        `import json, os, sys; os.write(int(sys.argv[1]), (json.dumps({"type": "child", "role": "${role}", "state": "started"}) + "\\n").encode()); os._exit(1)`;
      const verdictWhile = async (role: string) =>
        verdictWith(role, { harness: { command: ['{python}', '-c', dies(role), '{eventsFd}'] } });
      const candidate = await verdictWhile('candidate');
      expect(candidate.failureCode, JSON.stringify(candidate)).toBe('candidate_error');
      expect(candidate.message).toContain('while your engine was running');
      const baseline = await verdictWhile('baseline');
      expect(baseline.failureCode, JSON.stringify(baseline)).toBe('harness_error');
    },
  );

  it.skipIf(!ok)(
    'a model setting that would mount the whole filesystem or the checkout is refused: infra_error, no hang',
    async () => {
      for (const [name, where] of [
        ['root', '/'],
        ['checkout', ROOT],
      ]) {
        const done = await verdictWith(`model-${name}`, { models: { 'toy-decode': where } });
        expect(done.failureCode, JSON.stringify(done)).toBe('infra_error');
        expect(done.message).toContain(`refusing to mount ${where}`);
      }
    },
  );
});
