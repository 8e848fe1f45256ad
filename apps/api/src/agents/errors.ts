import { HttpStatus } from '@nestjs/common';
import { AppError } from '../common/errors';

/** 410: the resource existed and is gone for good (a consumed one-time download). */
export const gone = (code: string, message: string) => new AppError(HttpStatus.GONE, code, message);
