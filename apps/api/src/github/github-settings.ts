import type { Config } from '../config/config';
import { serviceUnavailable } from '../common/errors';

/** What the GitHub App feature needs, and which of it this hub lacks. */
export interface GithubAppSettings {
  appId: string;
  slug: string;
  privateKey: string;
  webhookSecret: string;
  webUrl: string;
  apiUrl: string;
  retryAttempts: number;
  retryBaseMs: number;
}

const REQUIRED = [
  'GITHUB_APP_ID',
  'GITHUB_APP_SLUG',
  'GITHUB_APP_PRIVATE_KEY',
  'GITHUB_WEBHOOK_SECRET',
] as const;

export function missingGithubAppSettings(config: Config): string[] {
  return REQUIRED.filter((k) => !config[k]);
}

export function unconfiguredMessage(missing: string[]): string {
  return (
    `The GitHub App is not configured on this hub: set ${missing.join(', ')} (and GITHUB_WEB_URL / GITHUB_API_URL for GitHub Enterprise), then restart. ` +
    'Until then, submit engines as archives in the browser or with the CLI.'
  );
}

/** The settings, or 503 `github_app_unconfigured` naming what to set. */
export function githubAppSettings(config: Config): GithubAppSettings {
  const missing = missingGithubAppSettings(config);
  if (missing.length) throw serviceUnavailable('github_app_unconfigured', unconfiguredMessage(missing));
  return {
    appId: config.GITHUB_APP_ID!,
    slug: config.GITHUB_APP_SLUG!,
    // Env files often carry a PEM on one line with literal "\n".
    privateKey: config.GITHUB_APP_PRIVATE_KEY!.replace(/\\n/g, '\n'),
    webhookSecret: config.GITHUB_WEBHOOK_SECRET!,
    webUrl: config.GITHUB_WEB_URL.replace(/\/+$/, ''),
    apiUrl: config.GITHUB_API_URL.replace(/\/+$/, ''),
    retryAttempts: config.GITHUB_RETRY_ATTEMPTS,
    retryBaseMs: config.GITHUB_RETRY_BASE_MS,
  };
}
