import { chmodSync, mkdirSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ensureTraversable } from '../src/database/embedded-postgres';

describe('ensureTraversable (embedded Postgres as root)', () => {
  const made: string[] = [];
  afterEach(() => {
    for (const d of made.splice(0)) {
      chmodSync(d, 0o755);
      rmSync(d, { recursive: true, force: true });
    }
  });

  it('opens folders of our own for traversal', () => {
    const checkout = mkdtempSync(path.join(tmpdir(), 'dryft-checkout-'));
    made.push(checkout);
    chmodSync(checkout, 0o755);
    const data = path.join(checkout, '.data');
    mkdirSync(data, { mode: 0o700 });
    ensureTraversable(data, [checkout]);
    expect(statSync(data).mode & 0o001).toBe(0o001);
  });

  it('stops with what to do when a folder above is closed', () => {
    const closed = mkdtempSync(path.join(tmpdir(), 'dryft-home-'));
    made.push(closed);
    chmodSync(closed, 0o700);
    const checkout = path.join(closed, 'dryft');
    mkdirSync(checkout);
    expect(() => ensureTraversable(checkout, [checkout])).toThrow(
      /cannot enter .*dryft-home-.*chmod o\+x|DATABASE_URL/,
    );
    expect(statSync(closed).mode & 0o777).toBe(0o700);
  });
});
