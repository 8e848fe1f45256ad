import { HttpStatus } from '@nestjs/common';

/**
 * An error the user can act on: a stable code, an honest status and a message that says what to
 * change. Services throw these; the filter turns them into `{ error: { code, message } }`.
 */
export class AppError extends Error {
  constructor(
    public readonly status: number,
    public readonly code: string,
    message: string,
    public readonly details?: unknown,
    /** Sent as the `Retry-After` header (seconds) when set. */
    public readonly retryAfterSeconds?: number,
  ) {
    super(message);
  }
}

export const badRequest = (code: string, message: string, details?: unknown) =>
  new AppError(HttpStatus.BAD_REQUEST, code, message, details);
export const unauthorized = (code: string, message: string) =>
  new AppError(HttpStatus.UNAUTHORIZED, code, message);
export const forbidden = (code: string, message: string) => new AppError(HttpStatus.FORBIDDEN, code, message);
export const notFound = (code: string, message: string) => new AppError(HttpStatus.NOT_FOUND, code, message);
export const conflict = (code: string, message: string, details?: unknown) =>
  new AppError(HttpStatus.CONFLICT, code, message, details);
export const unprocessable = (code: string, message: string, details?: unknown) =>
  new AppError(HttpStatus.UNPROCESSABLE_ENTITY, code, message, details);
export const tooMany = (code: string, message: string, details?: unknown) =>
  new AppError(HttpStatus.TOO_MANY_REQUESTS, code, message, details);
export const serviceUnavailable = (code: string, message: string) =>
  new AppError(HttpStatus.SERVICE_UNAVAILABLE, code, message);
/** 503 with `Retry-After`: the hub cannot take this now, and says after how many seconds to try again. */
export const unavailableRetry = (
  code: string,
  message: string,
  retryAfterSeconds: number,
  details?: unknown,
) => new AppError(HttpStatus.SERVICE_UNAVAILABLE, code, message, details, retryAfterSeconds);
