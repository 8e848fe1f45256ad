import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../src/config/config';
import { dataSourceOptions } from '../src/database/data-source';
import { clientIp, trustedProxies } from '../src/rate-limits/client-ip';

describe('loadConfig', () => {
  it('applies defaults', () => {
    const c = loadConfig({}, '/srv/dryft');
    expect(c).toMatchObject({
      PORT: 3000,
      dataDir: '/srv/dryft/.data',
      artifactDir: '/srv/dryft/.data/artifacts',
      githubOAuthConfigured: false,
      isProduction: false,
    });
  });

  it('logs as text outside production and as JSON in production, unless LOG_FORMAT says', () => {
    const db = { DATABASE_URL: 'postgres://dryft@db/dryft' };
    expect(loadConfig({}, '/srv').logFormat).toBe('text');
    expect(loadConfig({ NODE_ENV: 'production', ...db }, '/srv').logFormat).toBe('json');
    expect(loadConfig({ NODE_ENV: 'production', LOG_FORMAT: 'text', ...db }, '/srv').logFormat).toBe('text');
    expect(loadConfig({ LOG_FORMAT: 'json' }, '/srv').logFormat).toBe('json');
    expect(() => loadConfig({ LOG_FORMAT: 'pretty' }, '/srv')).toThrow(/LOG_FORMAT/);
  });

  it('sizes the database pool by DATABASE_POOL_MAX (20 by default), at least 2', () => {
    expect(loadConfig({}, '/srv').DATABASE_POOL_MAX).toBe(20);
    expect(loadConfig({ DATABASE_POOL_MAX: '8' }, '/srv').DATABASE_POOL_MAX).toBe(8);
    expect(() => loadConfig({ DATABASE_POOL_MAX: '1' }, '/srv')).toThrow(/DATABASE_POOL_MAX/);
    expect(dataSourceOptions('postgres://x@db/x', 8).extra).toMatchObject({ max: 8 });
    expect(dataSourceOptions('postgres://x@db/x').extra).toMatchObject({ max: 20 });
  });

  it('reports one line per problem', () => {
    try {
      loadConfig(
        { PORT: 'eighty', PUBLIC_URL: 'not a url', GITHUB_CLIENT_ID: 'x', NODE_ENV: 'production' },
        '/srv',
      );
      throw new Error('expected ConfigError');
    } catch (err) {
      expect(err).toBeInstanceOf(ConfigError);
      const problems = (err as ConfigError).problems;
      expect(problems.some((p) => p.startsWith('PORT:'))).toBe(true);
      expect(problems.some((p) => p.startsWith('PUBLIC_URL:'))).toBe(true);
    }
    try {
      loadConfig({ GITHUB_CLIENT_ID: 'x', NODE_ENV: 'production' }, '/srv');
    } catch (err) {
      const problems = (err as ConfigError).problems;
      expect(problems).toEqual([
        'GITHUB_CLIENT_ID and GITHUB_CLIENT_SECRET: set both or neither',
        'DATABASE_URL: required in production (embedded Postgres is for development)',
      ]);
    }
  });
});

describe('settings from files (X_FILE, as Docker secrets are mounted)', () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'dryft-config-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const secret = (name: string, text: string) => {
    const file = path.join(dir, name);
    writeFileSync(file, text, { mode: 0o600 });
    return file;
  };

  it('reads each secret from its file when the variable itself is unset, dropping the final newline', () => {
    const pem = '-----BEGIN RSA PRIVATE KEY-----\nMIIE\n-----END RSA PRIVATE KEY-----\n';
    const c = loadConfig(
      {
        NODE_ENV: 'production',
        DATABASE_URL: 'postgres://dryft@postgres:5432/dryft',
        DATABASE_PASSWORD_FILE: secret('pg', 'p@ss/w:rd\n'),
        GITHUB_CLIENT_ID: 'Iv1.abc',
        GITHUB_CLIENT_SECRET_FILE: secret('oauth', 'oauth-secret\n'),
        GITHUB_APP_ID: '12345',
        GITHUB_APP_PRIVATE_KEY_FILE: secret('key.pem', pem),
        GITHUB_WEBHOOK_SECRET_FILE: secret('hook', 'hook-secret'),
        HIDDEN_SEED_SECRET_FILE: secret('seed', `${'ab'.repeat(32)}\n`),
      },
      '/srv',
    );
    expect(c.GITHUB_CLIENT_SECRET).toBe('oauth-secret');
    expect(c.GITHUB_APP_PRIVATE_KEY).toBe(pem.trimEnd());
    expect(c.GITHUB_WEBHOOK_SECRET).toBe('hook-secret');
    expect(c.HIDDEN_SEED_SECRET).toBe('ab'.repeat(32));
    expect(c.githubOAuthConfigured).toBe(true);
    expect(c.githubAppConfigured).toBe(true);
    // The password goes into the URL, escaped; the URL from the environment carried none.
    const url = new URL(c.DATABASE_URL!);
    expect(decodeURIComponent(url.password)).toBe('p@ss/w:rd');
    expect(url.username).toBe('dryft');
    expect(url.host).toBe('postgres:5432');
  });

  it('reads a whole DATABASE_URL from a file, a relative path against the root', () => {
    secret('db-url', 'postgres://u:pw@db:5432/x\n');
    const c = loadConfig({ DATABASE_URL_FILE: path.basename(path.join(dir, 'db-url')) }, dir);
    expect(c.DATABASE_URL).toBe('postgres://u:pw@db:5432/x');
  });

  it('refuses a missing file, naming the variable and the path', () => {
    const missing = path.join(dir, 'nope');
    expect(() => loadConfig({ GITHUB_CLIENT_ID: 'x', GITHUB_CLIENT_SECRET_FILE: missing }, '/srv')).toThrow(
      ConfigError,
    );
    try {
      loadConfig({ GITHUB_CLIENT_ID: 'x', GITHUB_CLIENT_SECRET_FILE: missing }, '/srv');
    } catch (err) {
      expect((err as ConfigError).problems).toEqual([
        expect.stringMatching(
          new RegExp(
            `^GITHUB_CLIENT_SECRET_FILE: cannot read ${missing} \\(ENOENT\\); create it, make it readable by uid \\d+, or set GITHUB_CLIENT_SECRET instead$`,
          ),
        ),
      ]);
    }
  });

  it('refuses a path that cannot be read as a file (a folder, as a mistyped mount leaves)', () => {
    expect(() => loadConfig({ GITHUB_APP_PRIVATE_KEY_FILE: dir }, '/srv')).toThrow(
      new RegExp(`GITHUB_APP_PRIVATE_KEY_FILE: cannot read ${dir} \\(EISDIR\\)`),
    );
  });

  it.skipIf(process.getuid?.() === 0)('refuses an unreadable file (EACCES)', () => {
    const file = secret('locked', 'x');
    chmodSync(file, 0o000);
    expect(() => loadConfig({ GITHUB_WEBHOOK_SECRET_FILE: file }, '/srv')).toThrow(
      /GITHUB_WEBHOOK_SECRET_FILE: cannot read .*\(EACCES\)/,
    );
  });

  it('takes an empty file as unset, and refuses a variable set both ways and a password given twice', () => {
    const problems = (env: NodeJS.ProcessEnv) => {
      try {
        loadConfig(env, '/srv');
      } catch (err) {
        return (err as ConfigError).problems;
      }
      return [];
    };
    // An empty file is an unset setting: alone, nothing to say; half of a group, the group's rule.
    expect(problems({ GITHUB_WEBHOOK_SECRET_FILE: secret('empty', '\n') })).toEqual([]);
    expect(problems({ GITHUB_CLIENT_ID: 'Iv1.x', GITHUB_CLIENT_SECRET_FILE: secret('empty', '\n') })).toEqual(
      ['GITHUB_CLIENT_ID and GITHUB_CLIENT_SECRET: set both or neither'],
    );
    expect(problems({ GITHUB_CLIENT_SECRET: 'a', GITHUB_CLIENT_SECRET_FILE: secret('b', 'b') })).toEqual([
      'GITHUB_CLIENT_SECRET and GITHUB_CLIENT_SECRET_FILE: set one or the other, not both',
    ]);
    expect(
      problems({ DATABASE_URL: 'postgres://u:old@db/x', DATABASE_PASSWORD_FILE: secret('pw', 'new') }),
    ).toEqual([
      'DATABASE_URL and DATABASE_PASSWORD: DATABASE_URL already holds a password; keep it in one place',
    ]);
    expect(problems({ DATABASE_PASSWORD: 'pw' })).toEqual([
      'DATABASE_PASSWORD: set DATABASE_URL too (without a password; this one is put into it)',
    ]);
  });

  it('never echoes a secret read from a file in a validation error', () => {
    try {
      loadConfig({ HIDDEN_SEED_SECRET_FILE: secret('bad-seed', 'not-hex-secret-value') }, '/srv');
      throw new Error('expected ConfigError');
    } catch (err) {
      const text = (err as ConfigError).problems.join('\n');
      expect(text).toContain('HIDDEN_SEED_SECRET: write 64 lowercase hex characters');
      expect(text).toContain('the contents of HIDDEN_SEED_SECRET_FILE');
      expect(text).not.toContain('not-hex-secret-value');
    }
  });

  it('leaves LOCAL_AGENT_TOKEN_FILE alone: a setting of its own, not LOCAL_AGENT_TOKEN from a file', () => {
    const c = loadConfig({ LOCAL_AGENT_TOKEN_FILE: '/nonexistent/token' }, '/srv');
    expect(c.LOCAL_AGENT_TOKEN_FILE).toBe('/nonexistent/token');
  });
});

describe('TRUST_PROXY', () => {
  it('defaults to loopback and accepts names, addresses and CIDRs', () => {
    expect(loadConfig({}, '/srv').TRUST_PROXY).toBe('loopback');
    expect(
      loadConfig({ TRUST_PROXY: 'loopback, uniquelocal, 203.0.113.0/24, 2001:db8::1' }, '/srv').TRUST_PROXY,
    ).toBe('loopback, uniquelocal, 203.0.113.0/24, 2001:db8::1');
  });

  it('refuses an entry that is none of those', () => {
    expect(() => loadConfig({ TRUST_PROXY: 'loopback, nginx' }, '/srv')).toThrow(
      /TRUST_PROXY: "nginx" is not loopback, linklocal, uniquelocal, an IP address or a CIDR/,
    );
  });

  it('names the client behind a trusted proxy on a container network, and only there', () => {
    const proxies = trustedProxies('loopback, uniquelocal');
    if ('problem' in proxies) throw new Error(proxies.problem);
    // nginx at 172.18.0.5 forwarded for a participant: the participant is counted.
    expect(clientIp('::ffff:172.18.0.5', '198.51.100.7', proxies.trusted)).toBe('198.51.100.7');
    // A caller that is not a trusted proxy cannot pick its own address.
    expect(clientIp('203.0.113.9', '198.51.100.7', proxies.trusted)).toBe('203.0.113.9');
    // The default (loopback only) does not believe the container network.
    expect(clientIp('172.18.0.5', '198.51.100.7')).toBe('172.18.0.5');
  });
});
