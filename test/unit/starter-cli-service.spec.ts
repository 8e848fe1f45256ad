import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { CLI_BUNDLE, CliService } from '../../apps/api/src/cli/cli.service';
import { AppError } from '../../apps/api/src/common/errors';
import type { Config } from '../../apps/api/src/config/config';

/** GET /api/cli/dryft.cjs(.sha256): what the starter's installers download, or a 503 that says why not. */
describe('CliService', () => {
  const dirs: string[] = [];
  afterEach(() => dirs.splice(0).forEach((d) => rmSync(d, { recursive: true, force: true })));

  function hubWith(files: { bundle?: string; sha?: string }) {
    const root = mkdtempSync(path.join(tmpdir(), 'dryft-cli-'));
    dirs.push(root);
    const file = path.join(root, CLI_BUNDLE);
    mkdirSync(path.dirname(file), { recursive: true });
    if (files.bundle !== undefined) writeFileSync(file, files.bundle);
    if (files.sha !== undefined) writeFileSync(`${file}.sha256`, files.sha);
    return new CliService({ rootDir: root } as Config);
  }

  const failure = async (service: CliService) => {
    const err = await service.bundle().then(
      () => null,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(AppError);
    return err as AppError;
  };

  it('serves the bundle with the checksum the bundler wrote', async () => {
    const bundle = '#!/usr/bin/env node\nconsole.log("dryft")\n';
    const sha = createHash('sha256').update(bundle).digest('hex');
    const got = await hubWith({ bundle, sha: `${sha}  dryft.cjs\n` }).bundle();
    expect(got.bytes.toString()).toBe(bundle);
    expect(got.sha256).toBe(sha);
    expect(got.checksumLine).toBe(`${sha}  dryft.cjs\n`);
  });

  it('503 cli_unavailable with the operator’s fix when the bundle was not built', async () => {
    const err = await failure(hubWith({}));
    expect(err.status).toBe(503);
    expect(err.code).toBe('cli_unavailable');
    expect(err.message).toMatch(/npm run build/);
    expect((await failure(hubWith({ bundle: 'x' }))).code).toBe('cli_unavailable');
  });

  it('503 cli_checksum_mismatch rather than a pair the installers would refuse', async () => {
    const err = await failure(
      hubWith({ bundle: 'changed after bundling', sha: `${'0'.repeat(64)}  dryft.cjs\n` }),
    );
    expect(err.status).toBe(503);
    expect(err.code).toBe('cli_checksum_mismatch');
  });
});
