import { describe, expect, it } from 'vitest';
import { AgentConnections } from '../src/agents/agent-connections';
import { RunSweeper } from '../src/runs/run-sweeper.service';
import type { RunQueue } from '../src/runs/run-queue';
import { Clock } from '../src/common/clock';
import type { Config } from '../src/config/config';
import type { RunLifecycleService } from '../src/runs/run-lifecycle.service';

/** The sweeper with recording stand-ins for its repository and lifecycle (mocked repositories, unit tier). */
function sweeper(expired: { id: string; agentId: string }[] = []) {
  const calls: string[] = [];
  const repo = {
    extendLeases: async (until: Date) => (calls.push(`extend ${until.getTime() - Date.now() > 8_000}`), 2),
    expiredLeases: async () => (calls.push('expired?'), expired),
    overdue: async () => (calls.push('overdue?'), []),
  } as unknown as RunQueue;
  const lifecycle = {
    failForLostLease: async (id: string) => (calls.push(`fail ${id}`), true),
    renewLeases: async (_a: string, ids: string[]) => void calls.push(`renew ${ids.join()}`),
  } as unknown as RunLifecycleService;
  const connections = new AgentConnections();
  const config = { AGENT_LEASE_SECONDS: 3, DEADLINE_GRACE_SECONDS: 1 } as Config;
  const s = new RunSweeper(repo, lifecycle, connections, new Clock(), config);
  // Past the boot grace (a lease plus the reconnect backoff).
  (s as unknown as { bootedAt: number }).bootedAt = Date.now() - 60_000;
  const setLast = (monoAgo: number, wallAgo: number) =>
    ((s as unknown as { lastTick: { mono: number; wall: number } }).lastTick = {
      mono: performance.now() - monoAgo,
      wall: Date.now() - wallAgo,
    });
  return { s, calls, connections, setLast };
}

describe('RunSweeper', () => {
  it('judges expired leases on an ordinary tick', async () => {
    const { s, calls, setLast } = sweeper([{ id: 'r1', agentId: 'a1' }]);
    setLast(750, 750);
    await s.tick();
    expect(calls).toEqual(['expired?', 'fail r1', 'overdue?']);
  });

  it('after its own pause gives every lease a fresh window (lease + reconnect backoff) instead of judging', async () => {
    const { s, calls, setLast } = sweeper([{ id: 'r1', agentId: 'a1' }]);
    setLast(7_000, 7_000);
    await s.tick();
    expect(calls).toEqual(['extend true']);
    // Deadlines wait for the window too; leases (now fresh) are judged again from the next tick.
    setLast(750, 750);
    calls.length = 0;
    await s.tick();
    expect(calls).toEqual(['expired?', 'fail r1']);
  });

  it('treats a jump of the wall clock like a pause', async () => {
    const { s, calls, setLast } = sweeper([{ id: 'r1', agentId: 'a1' }]);
    setLast(750, 60_750);
    await s.tick();
    expect(calls).toEqual(['extend true']);
  });

  it('renews rather than fails a run its agent named in a message received within the lease', async () => {
    const { s, calls, connections, setLast } = sweeper([
      { id: 'r1', agentId: 'a1' },
      { id: 'r2', agentId: 'a2' },
    ]);
    connections.heardOf('a1', ['r1']);
    connections.heardOf('a9', ['r2']); // another agent naming r2 proves nothing about a2
    setLast(750, 750);
    await s.tick();
    expect(calls).toEqual(['expired?', 'renew r1', 'fail r2', 'overdue?']);
  });
});
