import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { unreadableByEngine } from '../src/sandbox';

describe('unreadableByEngine: the model as the jailed engine uid sees it', () => {
  const dirs: string[] = [];
  afterEach(() => {
    for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
  });
  const model = () => {
    const d = mkdtempSync(path.join(tmpdir(), 'dryft-model-'));
    dirs.push(d);
    chmodSync(d, 0o755);
    writeFileSync(path.join(d, 'config.json'), '{}', { mode: 0o644 });
    return d;
  };

  it('lists a checkpoint save_pretrained wrote 0600 (found on the H200: the engine saw FileNotFoundError)', () => {
    const d = model();
    writeFileSync(path.join(d, 'model.safetensors'), 'x', { mode: 0o600 });
    chmodSync(path.join(d, 'model.safetensors'), 0o600);
    expect(unreadableByEngine(d)).toEqual([path.join(d, 'model.safetensors')]);
    chmodSync(path.join(d, 'model.safetensors'), 0o644);
    expect(unreadableByEngine(d)).toEqual([]);
  });

  it('lists a folder others cannot enter, and a single-file model', () => {
    const d = model();
    mkdirSync(path.join(d, 'shards'), { mode: 0o700 });
    chmodSync(path.join(d, 'shards'), 0o700);
    expect(unreadableByEngine(d)).toEqual([path.join(d, 'shards')]);
    const f = path.join(d, 'model.json');
    writeFileSync(f, '{}', { mode: 0o600 });
    chmodSync(f, 0o600);
    expect(unreadableByEngine(f)).toEqual([f]);
  });

  it('says nothing about a path that does not exist (the harness reports that itself)', () => {
    expect(unreadableByEngine('/nonexistent/dryft-model')).toEqual([]);
  });
});
