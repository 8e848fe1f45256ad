import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../src/config/config';

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
