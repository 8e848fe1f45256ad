import type { Hub } from '../../apps/api/src/bootstrap';
import { CheckerBusy, type CheckPool } from '../../apps/api/src/submissions/check-pool';
import { UploadChecker } from '../../apps/api/src/submissions/upload-checker';

/**
 * Makes an in-process hub's upload checker pool answer the next `times` checks as a full pool does
 * (CheckerBusy: every thread checking, the queue full, retry after `retryAfterSeconds`), so the API
 * refuses those uploads with its real 503 `checker_busy`, message and Retry-After. A full pool made
 * of real heavy uploads races the client for the one free thread; this does not. `refused()` counts
 * the checks turned away so far; `restore()` puts the pool back as it was.
 */
export function busyCheckers(
  hub: Pick<Hub, 'app'>,
  times: number,
  retryAfterSeconds = 1,
): { refused(): number; restore(): void } {
  const pool = (hub.app.get(UploadChecker) as unknown as { pool: CheckPool }).pool;
  const archive = pool.checkArchive;
  const file = pool.checkFile;
  let refused = 0;
  const busy = () => {
    if (refused >= times) return null;
    refused += 1;
    return Promise.reject(new CheckerBusy(retryAfterSeconds, 0));
  };
  pool.checkArchive = (bytes) => busy() ?? archive.call(pool, bytes);
  pool.checkFile = (filename, bytes) => busy() ?? file.call(pool, filename, bytes);
  return {
    refused: () => refused,
    restore() {
      pool.checkArchive = archive;
      pool.checkFile = file;
    },
  };
}
