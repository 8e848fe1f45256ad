import { ConsoleLogger, LogLevel } from '@nestjs/common';
import { AsyncLocalStorage } from 'node:async_hooks';
import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';

/**
 * Structured fields for one log line (`runId`, …), passed after the message:
 * `this.logger.warn(\`run ${id} failed\`, forRun(id))`. In JSON they become fields of the line; the
 * text format leaves them out, so its lines stay as they were.
 */
export class LogFields {
  constructor(readonly fields: Readonly<Record<string, string | number | boolean>>) {}
}

/** The fields of a line that concerns a run. */
export function forRun(runId: string, more: Record<string, string | number | boolean> = {}): LogFields {
  return new LogFields({ runId, ...more });
}

const requestScope = new AsyncLocalStorage<{ requestId: string }>();

/** The id of the HTTP request being handled, if any (every line logged while handling it carries it). */
export function currentRequestId(): string | undefined {
  return requestScope.getStore()?.requestId;
}

/** A caller's `X-Request-Id` is kept when it is a plain token (a proxy's id); anything else is replaced. */
const ACCEPTED_REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/**
 * Handles `req` under its request id: the caller's `X-Request-Id` when it is a plain token of at most
 * 128 characters, else a new UUID. The id is echoed in the response's `X-Request-Id` header.
 *
 * `scopeLogLines` (JSON logs only: the text format prints no request id) also runs the handler in
 * the id's async scope, so lines logged meanwhile carry it. That scope is not free: on Node 20 the
 * first AsyncLocalStorage.run turns on promise hooks for the whole process, and every await after
 * it, socket batches included, pays for them (bench/RESULTS.md: about 3× per await in isolation;
 * Node 24's AsyncContextFrame makes it far cheaper). So text logs never open it.
 */
export function withRequestId(
  req: IncomingMessage,
  res: ServerResponse,
  scopeLogLines: boolean,
  handle: () => void,
): void {
  const given = req.headers['x-request-id'];
  const requestId = typeof given === 'string' && ACCEPTED_REQUEST_ID.test(given) ? given : randomUUID();
  res.setHeader('X-Request-Id', requestId);
  if (scopeLogLines) requestScope.run({ requestId }, handle);
  else handle();
}

export type LogFormat = 'json' | 'text';

/** pino's level names, which log tooling knows; Nest's `log` is `info`. */
const JSON_LEVEL: Record<LogLevel, string> = {
  fatal: 'fatal',
  error: 'error',
  warn: 'warn',
  log: 'info',
  debug: 'debug',
  verbose: 'trace',
};

export interface DryftLoggerOptions {
  format: LogFormat;
  levels: LogLevel[];
  /** Where JSON lines go (tests capture them); stdout by default. */
  write?: (line: string) => void;
}

/**
 * The hub's logger. `text`: Nest's console format, unchanged (the quick start's and the tests' lines).
 * `json`: one JSON object per line on stdout, with `time`, `level`, `context`, `msg`, the request id
 * while an HTTP request is handled, and the fields a caller passed ({@link LogFields}, e.g. `runId`).
 */
export class DryftLogger extends ConsoleLogger {
  private readonly format: LogFormat;
  private readonly write: (line: string) => void;

  constructor(opts: DryftLoggerOptions) {
    super();
    this.format = opts.format;
    this.write = opts.write ?? ((line) => void process.stdout.write(`${line}\n`));
    this.setLogLevels(opts.levels);
  }

  override log(message: unknown, ...params: unknown[]): void {
    this.emit('log', message, params);
  }
  override error(message: unknown, ...params: unknown[]): void {
    this.emit('error', message, params);
  }
  override warn(message: unknown, ...params: unknown[]): void {
    this.emit('warn', message, params);
  }
  override debug(message: unknown, ...params: unknown[]): void {
    this.emit('debug', message, params);
  }
  override verbose(message: unknown, ...params: unknown[]): void {
    this.emit('verbose', message, params);
  }
  override fatal(message: unknown, ...params: unknown[]): void {
    this.emit('fatal', message, params);
  }

  private emit(level: LogLevel, message: unknown, params: unknown[]): void {
    if (this.format === 'text') {
      // The fields are left out, so the text line is byte-for-byte the line without them. Nest's
      // Logger pads an `error` without parameters with `undefined` (the stack) before the context:
      // there the fields become that `undefined`.
      const plain =
        level === 'error'
          ? params.map((p) => (p instanceof LogFields ? undefined : p))
          : params.filter((p) => !(p instanceof LogFields));
      super[level](message, ...plain);
      return;
    }
    if (!this.isLevelEnabled(level)) return;
    this.write(JSON.stringify(jsonLine(level, message, params)));
  }
}

/** One JSON log line's object (exported for the unit test). */
export function jsonLine(
  level: LogLevel,
  message: unknown,
  params: unknown[],
  now = new Date(),
): Record<string, unknown> {
  const fields: Record<string, unknown> = {};
  const rest: unknown[] = [];
  for (const p of params) {
    if (p instanceof LogFields) Object.assign(fields, p.fields);
    else if (p !== undefined) rest.push(p);
  }
  // Nest puts the logger's context last; `error(message, stack, context)` puts the stack before it.
  const context =
    rest.length && typeof rest[rest.length - 1] === 'string' ? (rest.pop() as string) : undefined;
  let msg: string;
  if (typeof message === 'string') msg = message;
  else if (message instanceof Error) {
    msg = message.message;
    if (message.stack) fields.stack = message.stack;
  } else msg = JSON.stringify(message) ?? String(message);
  if (rest.length && (level === 'error' || level === 'fatal') && typeof rest[0] === 'string' && !fields.stack)
    fields.stack = rest.shift();
  if (rest.length) fields.extra = rest;
  const requestId = currentRequestId();
  return {
    time: now.toISOString(),
    level: JSON_LEVEL[level],
    pid: process.pid,
    ...(context !== undefined ? { context } : {}),
    msg,
    ...(requestId ? { requestId } : {}),
    ...fields,
  };
}
