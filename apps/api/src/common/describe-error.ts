/**
 * An error as one line a person can act on: its message, plus a child process's stderr when the
 * message does not already carry it. Never `undefined` (a rejection without a value is named).
 */
export function describeError(err: unknown): string {
  if (err instanceof Error) {
    const extra = err as Error & { stderr?: Buffer | string };
    const stderr = extra.stderr ? String(extra.stderr).trim() : '';
    return `${err.message}${stderr && !err.message.includes(stderr) ? ` (${stderr})` : ''}`;
  }
  if (err === undefined || err === null) return 'no error message (a bug: please report it)';
  return typeof err === 'string' ? err : JSON.stringify(err);
}
