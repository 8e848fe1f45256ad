/**
 * Exit codes a script can tell apart, and the one error type every command throws. The message of
 * a CliError is written for a person: what went wrong and what to do next.
 */
export const EXIT = {
  ok: 0,
  /** The run failed or was canceled (or `--wait` saw it end that way). */
  runFailed: 1,
  /** Bad input: usage, validation, unknown id, refused by the API as invalid. */
  badInput: 2,
  /** Authentication or permission: no token, malformed token, 401, 403. */
  auth: 3,
  /** The API could not be reached (connection refused, DNS, timeout, dropped connection). */
  network: 4,
  /** The API answered with a server error (5xx) or something the CLI cannot read. */
  server: 5,
  /** `--wait` ran out of time; the run goes on (follow it with `dryft result RUN_ID --wait`). */
  waitTimeout: 6,
} as const;
export type ExitCode = (typeof EXIT)[keyof typeof EXIT];

export class CliError extends Error {
  constructor(
    readonly exitCode: ExitCode,
    message: string,
    /** A stable code for `--json` output (the API's error code when there is one). */
    readonly code: string = codeFor(exitCode),
    readonly details?: unknown,
  ) {
    super(message);
  }
}

function codeFor(exit: ExitCode): string {
  switch (exit) {
    case EXIT.runFailed:
      return 'run_failed';
    case EXIT.badInput:
      return 'bad_input';
    case EXIT.auth:
      return 'auth';
    case EXIT.network:
      return 'network';
    case EXIT.server:
      return 'server_error';
    case EXIT.waitTimeout:
      return 'wait_timeout';
    default:
      return 'error';
  }
}

/** The exit code for an HTTP error status from the API. */
export function exitForStatus(status: number): ExitCode {
  if (status === 401 || status === 403) return EXIT.auth;
  if (status >= 500) return EXIT.server;
  return EXIT.badInput;
}

/** The advice of the decode page's troubleshooting section, for a refused or missing token. */
export function tokenAdvice(source: string): string {
  return [
    `The token came from ${source}.`,
    '  - Check that DRYFT_TOKEN is set in the same terminal (export DRYFT_TOKEN=…), or run `dryft login`.',
    '  - Check that the token was copied fully (it starts with dryft_pat_ and has 38 more characters).',
    "  - Check that the token's creator is still a member of the team.",
    '  - A revoked or expired token needs a replacement from a team owner or admin (Team → API tokens).',
    '  - Run `dryft doctor` to check connectivity and the token.',
    'Never put a token in git, an engine archive or a bug report.',
  ].join('\n');
}
