import { chmodSync, copyFileSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
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
 * What the first run on a real GPU box found (docs/GPU_E2E.md), through the real agent on the CPU:
 * a box whose bubblewrap is not /usr/bin/bwrap (the gpu-smoke pack's bin/bwrap), and a checkpoint
 * the engine's own uid cannot read (save_pretrained writes model.safetensors 0600).
 */
describe('a GPU box as gpu-smoke found it (through the real agent)', () => {
  let db: { url: string; drop: () => Promise<void> };
  let api: ApiProc;
  let agent: AgentProc | undefined;
  let dataDir: string;
  let org: HttpUser;
  let owner: HttpUser;
  const sandbox = probeSandbox();
  available('bubblewrap with namespaces', sandbox.ok, `${sandbox.reason}; apt-get install bubblewrap`);
  // The engine's jail runs as its own uid only when the agent is root (as on the lent H200).
  const ok = sandbox.ok && process.getuid?.() === 0;

  beforeAll(async () => {
    if (!ok) return;
    db = await createTestDatabase();
    dataDir = path.join(ROOT, '.data', 'test', `gpu-box-${process.pid}-${Date.now()}`);
    mkdirSync(dataDir, { recursive: true });
    api = await startApi({ dbUrl: db.url, port: await freePort(), dataDir, env: { ADMIN_LOGINS: 'org' } });
    org = await HttpUser.signIn(api.url, 'org');
    owner = await HttpUser.signIn(api.url, 'gpu-box-owner');
    await owner.createTeam();
  }, 60_000);
  afterAll(async () => {
    await stopProc(agent, 'SIGKILL');
    await stopProc(api);
    await db?.drop().catch(() => undefined);
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  });

  const runToy = async () => {
    const started = await owner.startRun(await owner.upload(await toyEngineWith('')));
    const done = await owner.waitFor(started.id, terminal, 90_000);
    const logs = (await owner.allLogs(started.id)).map((l) => l.text);
    return { done, text: logs.join('\n'), why: `${JSON.stringify(done)}\n${logs.join('\n')}` };
  };

  it.skipIf(!ok)(
    'hands its own bubblewrap (DRYFT_BWRAP, outside /usr) to the engine jail, not /usr/bin/bwrap',
    async () => {
      // A wrapper standing in for the pack's bin/bwrap: it says when it builds the engine's jail
      // (the only bubblewrap call with --seccomp), then runs the real one.
      const bin = path.join(dataDir, 'pack-bin');
      mkdirSync(bin, { recursive: true });
      const bwrap = path.join(bin, 'bwrap');
      writeFileSync(
        bwrap,
        '#!/bin/sh\ncase " $* " in *" --seccomp "*) echo "pack-bwrap: building the engine jail" >&2 ;; esac\nexec /usr/bin/bwrap "$@"\n',
      );
      chmodSync(bwrap, 0o755);
      chmodSync(bin, 0o755);
      const created = await org.createAgent('box-pack-bwrap');
      agent = spawnAgent({
        apiUrl: api.url,
        token: created.token,
        dir: path.join(dataDir, 'agent-a'),
        env: { DRYFT_BWRAP: bwrap },
      });
      const r = await runToy();
      expect(r.done.status, r.why).toBe('succeeded');
      expect(r.text, r.why).toContain('pack-bwrap: building the engine jail');
      await stopProc(agent);
      agent = undefined;
    },
    120_000,
  );

  it.skipIf(!ok)(
    'refuses a run whose model the engine uid cannot read, naming the file and the chmod',
    async () => {
      const model = path.join(dataDir, 'model-0600');
      mkdirSync(model, { recursive: true });
      chmodSync(model, 0o755);
      copyFileSync(path.join(ROOT, 'models/toy/model.json'), path.join(model, 'model.json'));
      chmodSync(path.join(model, 'model.json'), 0o600);
      const created = await org.createAgent('box-unreadable-model');
      agent = spawnAgent({
        apiUrl: api.url,
        token: created.token,
        dir: path.join(dataDir, 'agent-b'),
        config: { models: { 'toy-decode': model } },
      });
      const r = await runToy();
      expect(r.done.status, r.why).toBe('failed');
      expect(r.done.failureCode, r.why).toBe('infra_error');
      expect(r.text, r.why).toContain(`cannot read the model: ${path.join(model, 'model.json')}`);
      expect(r.text, r.why).toContain(`chmod -R a+rX ${model}`);
      // Readable again: the same agent runs it.
      chmodSync(path.join(model, 'model.json'), 0o644);
      const again = await runToy();
      expect(again.done.status, again.why).toBe('succeeded');
    },
    150_000,
  );
});
