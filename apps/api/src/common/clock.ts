import { Injectable } from '@nestjs/common';

/** Time behind a class, so tests can fix "now" (UTC days, expiries, leases). */
@Injectable()
export class Clock {
  now(): Date {
    return new Date();
  }
}
