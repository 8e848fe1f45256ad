import { readlinkSync } from 'node:fs';
import { setPriority } from 'node:os';
import { parentPort } from 'node:worker_threads';
import { validateSingleFile } from '@dryft/libs';
import { validateArchive } from '@dryft/libs/node';
import type { CheckJob, CheckReply } from './check-pool';

/**
 * One thread of the upload checker pool ({@link CheckPool}): the shared rules of libs (the same
 * code the CLI and the browser run), off the API's event loop. Only names and sizes go back: the
 * API stores the upload's own bytes.
 */
const port = parentPort;
if (!port) throw new Error('check-worker runs as a worker thread of the API');

/**
 * Checks are background work: on Linux this thread (and only it: a thread id given to setpriority
 * names one thread) runs at the lowest priority, so on a busy machine the event loop it shares the
 * cores with always comes first. Elsewhere the thread keeps the process's priority.
 */
try {
  const tid = Number(readlinkSync('/proc/thread-self').split('/').pop());
  if (tid > 0) setPriority(tid, 19);
} catch {
  /* not Linux: no per-thread priority */
}
port.on('message', (job: CheckJob) => {
  const bytes = new Uint8Array(job.bytes);
  const checked =
    job.kind === 'file' ? Promise.resolve(validateSingleFile(job.filename, bytes)) : validateArchive(bytes);
  checked.then(
    (v) => {
      const reply: CheckReply = {
        id: job.id,
        validation: {
          ...v,
          files: v.files.map((f) => ({ path: f.path, size: f.size, content: new Uint8Array(0) })),
        },
      };
      port.postMessage(reply);
    },
    (err: Error) => port.postMessage({ id: job.id, error: err.message } satisfies CheckReply),
  );
});
port.postMessage({ ready: true } satisfies CheckReply);
