import { Inject, Injectable } from '@nestjs/common';
import { createHash } from 'node:crypto';
import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import { serviceUnavailable } from '../common/errors';
import { CONFIG, Config } from '../config/config';

/** Where `scripts/bundle-cli.mjs` writes the one-file CLI, relative to the repository root. */
export const CLI_BUNDLE = 'apps/cli/dist/dryft.cjs';

export interface CliBundle {
  bytes: Buffer;
  sha256: string;
  /** The line the bundler wrote: "<hex>  dryft.cjs" (what `sha256sum -c` reads). */
  checksumLine: string;
}

/**
 * The `dryft` CLI as the starter's install-dryft.sh / install-dryft.ps1 download it: the bundle
 * and the checksum the bundler wrote beside it. The checksum file is the publisher's statement;
 * the hub refuses to serve a bundle that disagrees with it rather than hand out a pair that an
 * installer would (rightly) reject.
 */
@Injectable()
export class CliService {
  constructor(@Inject(CONFIG) private readonly config: Config) {}

  get bundlePath(): string {
    return path.join(this.config.rootDir, CLI_BUNDLE);
  }

  async bundle(): Promise<CliBundle> {
    const file = this.bundlePath;
    let bytes: Buffer;
    let recorded: string;
    try {
      [bytes, recorded] = await Promise.all([fs.readFile(file), fs.readFile(`${file}.sha256`, 'utf8')]);
    } catch {
      throw serviceUnavailable(
        'cli_unavailable',
        `This hub has no CLI bundle (${CLI_BUNDLE} and ${CLI_BUNDLE}.sha256). The operator builds it with \`npm run build\` (or \`node scripts/bundle-cli.mjs\`); meanwhile, upload archives in the browser.`,
      );
    }
    const stated = recorded.trim().split(/\s+/)[0]?.toLowerCase() ?? '';
    const actual = createHash('sha256').update(bytes).digest('hex');
    if (stated !== actual) {
      throw serviceUnavailable(
        'cli_checksum_mismatch',
        `This hub's CLI bundle does not match its recorded sha256 (${CLI_BUNDLE}.sha256), so it is not served. The operator rebuilds both with \`node scripts/bundle-cli.mjs\`.`,
      );
    }
    return { bytes, sha256: actual, checksumLine: `${actual}  dryft.cjs\n` };
  }
}
