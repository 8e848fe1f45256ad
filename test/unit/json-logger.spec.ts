import { Logger } from '@nestjs/common';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { afterEach, describe, expect, it, vi } from 'vitest';
import {
  currentRequestId,
  DryftLogger,
  forRun,
  jsonLine,
  withRequestId,
} from '../../apps/api/src/common/logging';

const request = (headers: Record<string, string> = {}) => ({ headers }) as unknown as IncomingMessage;
const response = () => {
  const headers: Record<string, string> = {};
  return {
    headers,
    setHeader: (k: string, v: string) => void (headers[k] = v),
  } as unknown as ServerResponse & {
    headers: Record<string, string>;
  };
};

// Nest colours its text lines on a terminal: compared without the colour codes (and the time).
// eslint-disable-next-line no-control-regex
const plainText = (chunk: unknown) => String(chunk).replace(/\x1b\[[0-9;]*m/g, '');

describe('the JSON logger', () => {
  afterEach(() => {
    vi.restoreAllMocks();
    Logger.overrideLogger(new DryftLogger({ format: 'text', levels: ['error'] }));
  });

  it('writes one JSON object per line: time, level, context, msg, and the fields passed (runId)', () => {
    const lines: string[] = [];
    Logger.overrideLogger(
      new DryftLogger({ format: 'json', levels: ['error', 'warn', 'log'], write: (l) => lines.push(l) }),
    );
    const logger = new Logger('RunSweeper');
    logger.warn('run r-1 stopped at its whole-run deadline', forRun('r-1'));
    logger.log('plain line');
    logger.debug('below the level: not written');
    expect(lines).toHaveLength(2);
    for (const line of lines) expect(line).not.toContain('\n');
    const [first, second] = lines.map((l) => JSON.parse(l));
    expect(first).toEqual({
      time: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
      level: 'warn',
      pid: process.pid,
      context: 'RunSweeper',
      msg: 'run r-1 stopped at its whole-run deadline',
      runId: 'r-1',
    });
    expect(second).toMatchObject({ level: 'info', context: 'RunSweeper', msg: 'plain line' });
    expect(second).not.toHaveProperty('runId');
    expect(second).not.toHaveProperty('requestId');
  });

  it("puts an error's stack in `stack`, not in the message", () => {
    const err = new Error('boom');
    expect(jsonLine('error', 'sweep failed', ['the stack', 'RunSweeper'])).toMatchObject({
      level: 'error',
      context: 'RunSweeper',
      msg: 'sweep failed',
      stack: 'the stack',
    });
    expect(jsonLine('error', err, ['Errors'])).toMatchObject({
      msg: 'boom',
      stack: err.stack,
      context: 'Errors',
    });
  });

  it('adds the request id to every line logged while a request is handled, and echoes it', async () => {
    const lines: string[] = [];
    Logger.overrideLogger(new DryftLogger({ format: 'json', levels: ['log'], write: (l) => lines.push(l) }));
    const logger = new Logger('Test');
    const res = response();
    await new Promise<void>((done) =>
      withRequestId(request({ 'x-request-id': 'lb-42' }), res, true, () => {
        logger.log('before a wait');
        setTimeout(() => {
          logger.log('after a wait');
          done();
        }, 1);
      }),
    );
    logger.log('outside any request');
    expect(res.headers['X-Request-Id']).toBe('lb-42');
    expect(lines.map((l) => JSON.parse(l).requestId)).toEqual(['lb-42', 'lb-42', undefined]);
  });

  it('replaces a request id that is not a plain token of at most 128 characters with a new UUID', () => {
    for (const given of ['has space', 'x'.repeat(129), 'a"b', '']) {
      const res = response();
      withRequestId(request({ 'x-request-id': given }), res, true, () => undefined);
      expect(res.headers['X-Request-Id']).toMatch(/^[0-9a-f-]{36}$/);
    }
  });

  it('text logs: echoes the id but opens no async scope (on Node 20 it would slow every await after it)', () => {
    const res = response();
    let inside: string | undefined = 'not called';
    withRequestId(request({ 'x-request-id': 'lb-43' }), res, false, () => {
      inside = currentRequestId();
    });
    expect(res.headers['X-Request-Id']).toBe('lb-43');
    expect(inside).toBeUndefined();
  });

  it('text format: a line with fields prints exactly as the same line without them', () => {
    const out = vi.spyOn(process.stdout, 'write').mockImplementation(() => true);
    Logger.overrideLogger(new DryftLogger({ format: 'text', levels: ['warn'] }));
    const logger = new Logger('RunSweeper');
    logger.warn('run r-1 stopped at its whole-run deadline', forRun('r-1'));
    logger.warn('run r-1 stopped at its whole-run deadline');
    const [withFields, without] = out.mock.calls.map((c) => plainText(c[0]).replace(/^.*?(WARN)/, '$1'));
    expect(withFields).toBe(without);
    expect(withFields).toContain('[RunSweeper] run r-1 stopped at its whole-run deadline');
    expect(withFields).not.toContain('runId');
  });

  it('text format: an error with fields prints exactly as the same error without them', () => {
    const out = vi.spyOn(process.stderr, 'write').mockImplementation(() => true);
    Logger.overrideLogger(new DryftLogger({ format: 'text', levels: ['error'] }));
    const logger = new Logger('LiveGateway');
    logger.error('replay r-1: gone', forRun('r-1'));
    logger.error('replay r-1: gone');
    const [withFields, without] = out.mock.calls.map((c) => plainText(c[0]).replace(/^.*?(ERROR)/, '$1'));
    expect(withFields).toBe(without);
    expect(withFields).toContain('[LiveGateway] replay r-1: gone');
  });
});
