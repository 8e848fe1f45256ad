import { chmodSync, existsSync, mkdirSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import * as path from 'node:path';

/** Where the per-install secret behind derived hidden seeds lives: `<DATA_DIR>/hidden-seed.secret`. */
export const hiddenSeedSecretFile = (dataDir: string) => path.join(dataDir, 'hidden-seed.secret');

/**
 * The install's hidden-seed secret: read from the data folder, or made at first start (64 random
 * hex characters, mode 0600). Hidden workloads whose definition has no `seed` take one derived
 * from it (withHiddenSeeds), so a dev hub works from the shipped definitions and nobody can compute
 * its hidden prompts from the public repository. Keep the file: a new secret means new prompts.
 */
export function hiddenSeedSecret(dataDir: string, log: (m: string) => void = () => {}): string {
  const file = hiddenSeedSecretFile(dataDir);
  if (existsSync(file)) {
    const mode = statSync(file).mode & 0o777;
    if (mode !== 0o600) {
      chmodSync(file, 0o600);
      log(`${file} was readable by others (mode ${mode.toString(8)}); now 0600`);
    }
    const value = readFileSync(file, 'utf8').trim();
    if (/^[0-9a-f]{64}$/.test(value)) return value;
    throw new Error(
      `${file} does not hold a secret Dryft made (64 hex characters). Restore it from a backup, or delete it to make a new one (the derived hidden seeds change).`,
    );
  }
  mkdirSync(dataDir, { recursive: true });
  const secret = randomBytes(32).toString('hex');
  const tmp = `${file}.${process.pid}.tmp`;
  writeFileSync(tmp, `${secret}\n`, { mode: 0o600 });
  chmodSync(tmp, 0o600);
  renameSync(tmp, file);
  log(`made the per-install hidden-seed secret ${file} (mode 0600)`);
  return secret;
}
