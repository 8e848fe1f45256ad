import { Injectable, PipeTransform } from '@nestjs/common';
import { notFound } from './errors';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** A path id that is not a UUID names nothing: 404 with what was expected, not a database error. */
@Injectable()
export class UuidParam implements PipeTransform<string, string> {
  constructor(private readonly what = 'resource') {}
  transform(value: string): string {
    if (!UUID.test(value))
      throw notFound(`${this.what}_not_found`, `No ${this.what} with id "${value}" (ids look like 3f2c…-…).`);
    return value.toLowerCase();
  }
}
