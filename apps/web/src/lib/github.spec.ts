import { describe, expect, it } from 'vitest';
import { deliveryClass, deliveryEvent, pendingDelivery } from './github';

describe('Check delivery helpers', () => {
  it('names what triggered a delivery', () => {
    expect(deliveryEvent({ event: 'push', action: null, ref: 'refs/heads/main' })).toBe('push main');
    expect(deliveryEvent({ event: 'run_now', action: 'official', ref: 'refs/heads/trunk' })).toBe(
      'Run now (official) trunk',
    );
    expect(deliveryEvent({ event: 'installation', action: 'deleted', ref: null })).toBe(
      'installation.deleted',
    );
  });

  it('marks results and what is still being processed', () => {
    expect(deliveryClass('succeeded')).toBe('ok');
    expect(deliveryClass('failed')).toBe('bad');
    expect(deliveryClass('rejected')).toBe('bad');
    expect(deliveryClass('queued')).toBe('warn');
    expect(pendingDelivery({ status: 'processing' })).toBe(true);
    expect(pendingDelivery({ status: 'ignored' })).toBe(false);
  });
});
