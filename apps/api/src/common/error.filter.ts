import { ArgumentsHost, Catch, ExceptionFilter, HttpException, Logger } from '@nestjs/common';
import type { Response } from 'express';
import { ZodValidationException } from 'nestjs-zod';
import { ZodError } from 'zod';
import { DATABASE_RETRY_AFTER_SECONDS, databaseUnavailable, isDatabaseUnavailable } from './database-errors';
import { AppError } from './errors';

function describeZod(error: ZodError): string {
  return error.issues.map((i) => `${i.path.join('.') || 'body'}: ${i.message}`).join('; ');
}

type Refusal = { status: number; body: { error: { code: string; message: string } } };
const refusal = (status: number, code: string, message: string): Refusal => ({
  status,
  body: { error: { code, message } },
});

/**
 * The body parser's own refusals (http-errors with a 4xx status): its status kept, its words made
 * to say what to change. Anything else it raises is not the client's fault and stays a 500.
 */
function bodyParserRefusal(exception: unknown): Refusal | null {
  const e = exception as {
    type?: string;
    status?: number;
    expose?: boolean;
    charset?: string;
    encoding?: string;
    code?: string;
    message?: string;
  };
  if (!e || typeof e !== 'object' || typeof e.status !== 'number' || e.status < 400 || e.status > 499)
    return null;
  if (e.expose !== true) return null;
  switch (e.type) {
    case 'charset.unsupported':
      return refusal(
        415,
        'unsupported_charset',
        `The request body's charset "${String(e.charset ?? '').toUpperCase()}" is not supported; send it as UTF-8 (Content-Type: application/json; charset=utf-8).`,
      );
    case 'encoding.unsupported':
      return refusal(
        415,
        'unsupported_encoding',
        `The request body's Content-Encoding "${e.encoding ?? ''}" is not supported; send it uncompressed, or as gzip, deflate or br.`,
      );
    case 'querystring.parse.rangeError':
      return refusal(
        400,
        'invalid_body',
        'The form body is nested deeper than the server accepts (32 levels of brackets); send a flatter form, or JSON.',
      );
    case 'parameters.too.many':
      return refusal(
        413,
        'payload_too_large',
        'The form body has more than 1000 parameters; send fewer, or JSON.',
      );
    case 'request.aborted':
      return refusal(400, 'invalid_body', 'The request body ended before it was complete; send it again.');
    case 'request.size.invalid':
      return refusal(
        400,
        'invalid_body',
        'The request body is not as long as its Content-Length says; send it again with the right length.',
      );
  }
  if (typeof e.code === 'string' && e.code.startsWith('Z_'))
    return refusal(
      400,
      'invalid_body',
      `The request body could not be decompressed as its Content-Encoding says (${e.message ?? e.code}); send it uncompressed, or compress it as labelled (gzip, deflate or br).`,
    );
  return refusal(
    e.status,
    STATUS_CODES[e.status] ?? 'bad_request',
    `The request body was refused: ${e.message ?? ''}.`,
  );
}

const STATUS_CODES: Record<number, string> = {
  400: 'bad_request',
  401: 'unauthorized',
  403: 'forbidden',
  404: 'not_found',
  405: 'method_not_allowed',
  409: 'conflict',
  413: 'payload_too_large',
  415: 'unsupported_media_type',
  422: 'unprocessable',
  429: 'too_many_requests',
};

/** Every error leaves as `{ error: { code, message } }` with an honest status. */
@Catch()
export class ErrorFilter implements ExceptionFilter {
  private readonly logger = new Logger('Errors');
  private lastOutageLog = 0;

  catch(exception: unknown, host: ArgumentsHost): void {
    const res = host.switchToHttp().getResponse<Response>();
    if (res.headersSent) return;
    const { status, body } = this.toBody(exception);
    if (body.error.code === 'database_unavailable')
      res.setHeader('Retry-After', String(DATABASE_RETRY_AFTER_SECONDS));
    else if (exception instanceof AppError && exception.retryAfterSeconds !== undefined)
      res.setHeader('Retry-After', String(Math.max(1, Math.ceil(exception.retryAfterSeconds))));
    res.status(status).json(body);
  }

  toBody(exception: unknown): {
    status: number;
    body: { error: { code: string; message: string; details?: unknown } };
  } {
    if (!(exception instanceof AppError) && isDatabaseUnavailable(exception)) {
      // One line every 10 s, not one per request, while Postgres is away.
      if (Date.now() - this.lastOutageLog > 10_000) {
        this.lastOutageLog = Date.now();
        this.logger.warn(`database unavailable: ${(exception as Error).message}; answering 503`);
      }
      exception = databaseUnavailable();
    }
    if (exception instanceof AppError) {
      const error: { code: string; message: string; details?: unknown } = {
        code: exception.code,
        message: exception.message,
      };
      if (exception.details !== undefined) error.details = exception.details;
      return { status: exception.status, body: { error } };
    }
    if (exception instanceof ZodValidationException) {
      const zodError = exception.getZodError() as ZodError;
      return { status: 400, body: { error: { code: 'invalid_request', message: describeZod(zodError) } } };
    }
    if (exception instanceof ZodError) {
      return { status: 400, body: { error: { code: 'invalid_request', message: describeZod(exception) } } };
    }
    if (exception instanceof HttpException) {
      const status = exception.getStatus();
      const response = exception.getResponse();
      let message = exception.message;
      if (typeof response === 'object' && response && 'message' in response) {
        const m = (response as { message: unknown }).message;
        message = Array.isArray(m) ? m.join('; ') : String(m);
      }
      if (status === 404 && /^Cannot (GET|POST|PUT|PATCH|DELETE)/.test(message)) {
        message = `${message}: no such API route. The routes are listed in docs/API.md.`;
      }
      if (status === 400 && /JSON/.test(message) && /position|Unexpected|Expected/.test(message)) {
        return {
          status,
          body: {
            error: { code: 'invalid_json', message: `The request body is not valid JSON (${message}).` },
          },
        };
      }
      if (status === 413)
        message = 'The upload is larger than the server accepts; see the size limits of the benchmark.';
      return { status, body: { error: { code: STATUS_CODES[status] ?? 'error', message } } };
    }
    const err = exception as { type?: string; status?: number; message?: string };
    if (err?.type === 'entity.parse.failed') {
      return {
        status: 400,
        body: { error: { code: 'invalid_json', message: 'The request body is not valid JSON.' } },
      };
    }
    if (err?.type === 'entity.too.large') {
      return {
        status: 413,
        body: { error: { code: 'payload_too_large', message: 'The request body is too large.' } },
      };
    }
    const refused = bodyParserRefusal(exception);
    if (refused) return refused;
    this.logger.error(
      exception instanceof Error ? (exception.stack ?? exception.message) : String(exception),
    );
    return {
      status: 500,
      body: {
        error: {
          code: 'internal_error',
          message: 'Something went wrong on the server; try again, and report it if it persists.',
        },
      },
    };
  }
}
