import { existsSync } from 'node:fs';
import * as path from 'node:path';
import { Worker } from 'node:worker_threads';
import type { Validation } from '@dryft/libs';

/** What a checker thread is asked: an archive, or the single-file product's one file. */
export type CheckJob =
  | { id: number; kind: 'archive'; bytes: ArrayBuffer }
  | { id: number; kind: 'file'; filename: string; bytes: ArrayBuffer };
export type CheckReply =
  | { id: number; validation: Validation }
  | { id: number; error: string }
  /** Sent once, when the thread has loaded the checker and can take a job. */
  | { ready: true };

export interface CheckPoolOptions {
  /** Checker threads at most (started when first needed, kept afterwards). */
  workers: number;
  /** Uploads that may wait for a free thread; one more is refused at once ({@link CheckerBusy}). */
  queue: number;
  /** From arrival to verdict, waiting included: past it the upload is refused and its thread replaced. */
  timeoutMs: number;
}

/** Every thread is checking and the queue is full: nothing was stored; retry after `retryAfterSeconds`. */
export class CheckerBusy extends Error {
  constructor(
    readonly retryAfterSeconds: number,
    readonly waiting: number,
  ) {
    super(`all upload checkers are busy and ${waiting} uploads are waiting`);
  }
}

/** The upload's time budget ran out (`checking`: on a thread, else still waiting for one). */
export class CheckTimeout extends Error {
  constructor(
    readonly retryAfterSeconds: number,
    readonly checking: boolean,
    readonly waitedMs: number,
  ) {
    super(checking ? 'the check ran past its time budget' : 'no checker was free within the time budget');
  }
}

/** A checker thread died (out of memory, a crash): the upload was not judged. */
export class CheckCrashed extends Error {}

interface Pending {
  job: CheckJob;
  enqueuedAt: number;
  startedAt?: number;
  timer: NodeJS.Timeout;
  resolve(v: Validation): void;
  reject(e: Error): void;
}

interface Thread {
  worker: Worker;
  /** Loaded and able to take a job: time spent starting a thread counts as waiting, not checking. */
  ready: boolean;
  current?: Pending;
}

/** The checker as a worker-thread script: the compiled file, or, from TypeScript sources (tests), one bundle of it. */
function workerScript(): { script: string; eval: boolean } {
  const compiled = path.join(__dirname, 'check-worker.js');
  if (!__filename.endsWith('.ts') && existsSync(compiled)) return { script: compiled, eval: false };
  return { script: bundledFromSources(), eval: true };
}

let bundle: string | undefined;
/**
 * The API run from its TypeScript sources (vitest's in-process hubs) has no check-worker.js, and a
 * worker thread cannot load TypeScript: esbuild (a dev dependency, present wherever the sources run)
 * bundles check-worker.ts with the libs sources once per process.
 */
function bundledFromSources(): string {
  if (bundle) return bundle;
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- dev-only, loaded only from sources
  const esbuild = require('esbuild') as typeof import('esbuild');
  const libs = path.resolve(__dirname, '../../../../libs/src');
  const out = esbuild.buildSync({
    entryPoints: [path.join(__dirname, 'check-worker.ts')],
    bundle: true,
    platform: 'node',
    format: 'cjs',
    target: 'node20',
    write: false,
    logLevel: 'silent',
    // `@dryft/libs` → libs/src (index.ts), `@dryft/libs/node` → libs/src/node.ts.
    alias: { '@dryft/libs': libs },
  });
  bundle = out.outputFiles[0].text;
  return bundle;
}

/**
 * A bounded pool of worker threads for the upload checks (archive rules, the Python syntax check):
 * the API's event loop never parses Python, so one upload cannot stall health, live streams or agent
 * acks. At most `workers` checks run at once and `queue` wait; each upload has `timeoutMs` from
 * arrival to verdict, after which a running check's thread is terminated and replaced. A pool of our
 * own rather than piscina: a worker must also start from the TypeScript sources the integration
 * tier runs (see {@link bundledFromSources}), which piscina's loader cannot.
 */
export class CheckPool {
  private readonly threads: Thread[] = [];
  private readonly waiting: Pending[] = [];
  private nextId = 1;
  /** A moving average of how long one check takes here, for Retry-After. */
  private averageMs = 1000;
  private closed = false;

  constructor(private readonly opts: CheckPoolOptions) {}

  checkArchive(bytes: Uint8Array): Promise<Validation> {
    return this.submit({ id: this.nextId++, kind: 'archive', bytes: copy(bytes) });
  }

  checkFile(filename: string, bytes: Uint8Array): Promise<Validation> {
    return this.submit({ id: this.nextId++, kind: 'file', filename, bytes: copy(bytes) });
  }

  /** Checks running and waiting now. */
  get load(): { running: number; waiting: number } {
    return { running: this.threads.filter((t) => t.current).length, waiting: this.waiting.length };
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const p of this.waiting.splice(0)) {
      clearTimeout(p.timer);
      p.reject(new CheckCrashed('the hub is shutting down'));
    }
    const threads = this.threads.splice(0);
    for (const t of threads) {
      if (!t.current) continue;
      clearTimeout(t.current.timer);
      t.current.reject(new CheckCrashed('the hub is shutting down'));
      t.current = undefined;
    }
    await Promise.all(threads.map((t) => t.worker.terminate()));
  }

  /** Seconds until a slot is likely free: the checks ahead, spread over the threads. */
  retryAfterSeconds(): number {
    const ahead = this.load.running + this.load.waiting;
    const s = Math.ceil((this.averageMs * Math.max(1, ahead)) / Math.max(1, this.opts.workers) / 1000);
    return Math.min(60, Math.max(1, s));
  }

  private submit(job: CheckJob): Promise<Validation> {
    if (this.closed) return Promise.reject(new CheckCrashed('the hub is shutting down'));
    // Places: threads with no job (also those still starting), threads not started yet, and the
    // queue; the uploads waiting (for a thread to start or to finish) hold the first of them.
    const places =
      this.threads.filter((t) => !t.current).length +
      (this.opts.workers - this.threads.length) +
      this.opts.queue;
    if (this.waiting.length >= places)
      return Promise.reject(new CheckerBusy(this.retryAfterSeconds(), this.waiting.length));
    return new Promise<Validation>((resolve, reject) => {
      const pending: Pending = {
        job,
        enqueuedAt: Date.now(),
        resolve,
        reject,
        timer: setTimeout(() => this.expire(pending), this.opts.timeoutMs),
      };
      pending.timer.unref();
      this.waiting.push(pending);
      this.pump();
    });
  }

  private pump(): void {
    while (this.waiting.length > 0 && !this.closed) {
      const thread = this.threads.find((t) => t.ready && !t.current);
      if (!thread) {
        // Threads to start for the uploads waiting: they take them once they say they are ready.
        const starting = this.threads.filter((t) => !t.ready).length;
        try {
          for (let n = starting; n < this.waiting.length && this.threads.length < this.opts.workers; n++)
            this.spawn();
        } catch (err) {
          for (const w of this.waiting.splice(0)) {
            clearTimeout(w.timer);
            w.reject(new CheckCrashed(`the checker thread could not start: ${(err as Error).message}`));
          }
        }
        return;
      }
      const pending = this.waiting.shift()!;
      pending.startedAt = Date.now();
      thread.current = pending;
      thread.worker.postMessage(pending.job, [pending.job.bytes]);
    }
  }

  private spawn(): Thread {
    const { script, eval: isEval } = workerScript();
    const worker = new Worker(script, {
      eval: isEval,
      // A hostile archive can cost a thread its heap, never the API's.
      resourceLimits: { maxOldGenerationSizeMb: 512 },
    });
    worker.unref();
    const thread: Thread = { worker, ready: false };
    worker.on('message', (reply: CheckReply) => {
      if ('ready' in reply) {
        thread.ready = true;
        this.pump();
        return;
      }
      const p = thread.current;
      if (!p || p.job.id !== reply.id) return;
      thread.current = undefined;
      clearTimeout(p.timer);
      this.averageMs = 0.7 * this.averageMs + 0.3 * (Date.now() - p.startedAt!);
      if ('error' in reply) p.reject(new CheckCrashed(reply.error));
      else p.resolve(reply.validation);
      this.pump();
    });
    const lost = (why: string) => {
      const i = this.threads.indexOf(thread);
      if (i < 0) return;
      this.threads.splice(i, 1);
      const p = thread.current;
      thread.current = undefined;
      if (p) {
        clearTimeout(p.timer);
        p.reject(new CheckCrashed(why));
      }
      if (!thread.ready) {
        // It died while loading the checker: starting another would fail the same way, so the
        // uploads waiting are refused now and the next upload tries a fresh thread.
        for (const w of this.waiting.splice(0)) {
          clearTimeout(w.timer);
          w.reject(new CheckCrashed(why));
        }
        return;
      }
      this.pump();
    };
    worker.on('error', (err) => lost(`the checker thread failed: ${err.message}`));
    worker.on('exit', (code) => lost(`the checker thread exited (${code})`));
    this.threads.push(thread);
    return thread;
  }

  private expire(p: Pending): void {
    const waitedMs = (p.startedAt ?? Date.now()) - p.enqueuedAt;
    const queued = this.waiting.indexOf(p);
    if (queued >= 0) {
      this.waiting.splice(queued, 1);
      p.reject(new CheckTimeout(this.retryAfterSeconds(), false, waitedMs));
      return;
    }
    const thread = this.threads.find((t) => t.current === p);
    if (!thread) return;
    // The check ran past the budget: its thread is ended (that stops any parse) and a fresh one takes over.
    this.threads.splice(this.threads.indexOf(thread), 1);
    thread.current = undefined;
    void thread.worker.terminate();
    this.averageMs = Math.max(this.averageMs, this.opts.timeoutMs);
    p.reject(new CheckTimeout(this.retryAfterSeconds(), true, waitedMs));
    this.pump();
  }
}

/** The bytes as an ArrayBuffer of their own, transferred to the thread (the caller's buffer stays usable). */
function copy(bytes: Uint8Array): ArrayBuffer {
  const out = new ArrayBuffer(bytes.byteLength);
  new Uint8Array(out).set(bytes);
  return out;
}
