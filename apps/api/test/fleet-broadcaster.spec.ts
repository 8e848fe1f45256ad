import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { AgentView } from '@dryft/libs';
import { AGENTS_COALESCE_MS, FleetBroadcaster } from '../src/live/fleet-broadcaster';
import { fakeLive } from './builders/live-sockets';

const agent = (name: string): AgentView => ({
  id: name,
  name,
  status: 'online',
  capabilities: null,
  slots: 1,
  busySlots: 0,
  currentRuns: [],
  lastHeartbeatAt: null,
  createdAt: '2026-12-01T00:00:00.000Z',
});

describe('FleetBroadcaster', () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  it("sends a burst of fleet changes to the organizers' room as one agents.update, read once", async () => {
    const live = fakeLive();
    let reads = 0;
    const fleet = new FleetBroadcaster({
      agents: { list: async () => (reads++, [agent('a1'), agent('a2')]) },
      nsp: () => live.nsp,
      logError: () => undefined,
    });
    for (let i = 0; i < 5; i++) fleet.changed();
    await vi.advanceTimersByTimeAsync(AGENTS_COALESCE_MS);
    expect(reads).toBe(1);
    expect(live.sent).toEqual([
      { to: 'agents', event: 'agents.update', payload: { agents: [agent('a1'), agent('a2')] } },
    ]);
    fleet.changed();
    await vi.advanceTimersByTimeAsync(AGENTS_COALESCE_MS);
    expect(live.sent).toHaveLength(2);
  });

  it('logs a fleet it cannot read and sends nothing; stop cancels a pending update', async () => {
    const live = fakeLive();
    const errors: string[] = [];
    const fleet = new FleetBroadcaster({
      agents: {
        list: async () => {
          throw new Error('database down');
        },
      },
      nsp: () => live.nsp,
      logError: (m) => errors.push(m),
    });
    fleet.changed();
    await vi.advanceTimersByTimeAsync(AGENTS_COALESCE_MS);
    expect(errors).toEqual(['agents update: database down']);
    fleet.changed();
    fleet.stop();
    await vi.advanceTimersByTimeAsync(AGENTS_COALESCE_MS);
    expect(errors).toHaveLength(1);
    expect(live.sent).toHaveLength(0);
  });
});
